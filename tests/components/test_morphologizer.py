"""crf_morphologizer, targets "morph" and "pos+morph": spaCy's morphologizer
with a CRF, writing token.morph (and token.pos_) from labels in its format."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.ml import crf_batch_loss
from spacy_crf.scoring import morph_scores, morphologizer_score
from spacy_crf.targets import MORPH_TARGETS, gold_ids
from spacy_crf.targets.morph import morph_bundle, split_bundle

from ..helpers import (
    CONFIGS,
    MORPH_SENTENCES,
    assert_same_weights,
    make_nlp,
    run_spacy,
    train,
    write_morph_docbin,
)

TEST_TEXTS = ["I like blue ham .", "They eat green eggs", "ham", "", "Eat green eggs !"]

# the gold labels of MORPH_SENTENCES[0], "I like green eggs ."
FIRST_LABELS = {
    "morph": ["Case=Nom|Number=Sing|Person=1", "Tense=Pres|VerbForm=Fin", "Degree=Pos", "Number=Plur", "_"],
    "pos+morph": [
        "Case=Nom|Number=Sing|POS=PRON|Person=1",
        "POS=VERB|Tense=Pres|VerbForm=Fin",
        "Degree=Pos|POS=ADJ",
        "Number=Plur|POS=NOUN",
        "POS=PUNCT",
    ],
}


def morph_examples(nlp, sentences=MORPH_SENTENCES):
    return [
        Example.from_dict(nlp.make_doc(" ".join(words)), {"pos": pos, "morphs": morphs})
        for words, pos, morphs in sentences
    ]


def reference(nlp, index=0):
    words, pos, morphs = MORPH_SENTENCES[index]
    return Doc(nlp.vocab, words=words, pos=pos, morphs=morphs)


def analyses(doc):
    return [(token.pos_, str(token.morph)) for token in doc]


def assert_pos_morph_overfits_and_round_trips(nlp, losses, model, tmp_path):
    """The overfitting-IO checks of a "pos+morph" pipeline trained on
    MORPH_SENTENCES with `model`: it learnt them, and reloads (from disk, and
    into a new pipeline of the same model from bytes) with equal weights and
    the same analyses."""
    assert losses["crf_morphologizer"] < 2.5
    for words, pos, morphs in MORPH_SENTENCES:
        assert analyses(nlp(" ".join(words))) == list(zip(pos, morphs))
    expected = [analyses(doc) for doc in map(nlp, TEST_TEXTS)]
    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp2.get_pipe("crf_morphologizer"))
    assert [analyses(doc) for doc in map(nlp2, TEST_TEXTS)] == expected
    nlp3 = make_nlp(factory="crf_morphologizer", model=model, target="pos+morph")
    nlp3.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp3.get_pipe("crf_morphologizer"))
    assert [analyses(doc) for doc in map(nlp3, TEST_TEXTS)] == expected
    scores = nlp.evaluate(morph_examples(nlp))
    assert scores["pos_acc"] == 1.0 and scores["morph_acc"] == 1.0


@pytest.fixture(scope="module")
def trained():
    """A trained pipeline per target."""
    pipelines = {}
    for target in ("morph", "pos+morph"):
        # module-scoped fixtures run before the autouse `seeded` one: seed here
        fix_random_seed(0)
        nlp = make_nlp(factory="crf_morphologizer", target=target)
        pipelines[target] = (nlp, train(nlp, morph_examples(nlp), steps=100))
    return pipelines


@pytest.mark.parametrize("target", ["morph", "pos+morph"])
def test_overfitting_IO(trained, target, tmp_path):
    nlp, losses = trained[target]
    assert losses["crf_morphologizer"] < 2.5  # summed over 13 tokens; ~28 at the start
    for words, pos, morphs in MORPH_SENTENCES:
        doc = nlp(" ".join(words))
        expected_pos = pos if target == "pos+morph" else [""] * len(words)
        assert analyses(doc) == list(zip(expected_pos, morphs))
        assert all(token.has_morph() for token in doc)  # "." too: no features, annotated
    expected = [analyses(doc) for doc in map(nlp, TEST_TEXTS)]

    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp2.get_pipe("crf_morphologizer"))
    assert nlp2.get_pipe("crf_morphologizer").labels == nlp.get_pipe("crf_morphologizer").labels
    assert [analyses(doc) for doc in map(nlp2, TEST_TEXTS)] == expected

    nlp3 = make_nlp(factory="crf_morphologizer", target=target)
    nlp3.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp3.get_pipe("crf_morphologizer"))
    assert [analyses(doc) for doc in map(nlp3, TEST_TEXTS)] == expected

    for batch_size in (1, 2, 64):
        assert [analyses(doc) for doc in nlp.pipe(TEST_TEXTS, batch_size=batch_size)] == expected

    scores = nlp.evaluate(morph_examples(nlp))
    assert scores["morph_acc"] == 1.0
    if target == "pos+morph":
        assert scores["pos_acc"] == 1.0 and scores["pos_morph_acc"] == 1.0


@pytest.mark.parametrize("target", ["morph", "pos+morph"])
def test_labels_sorted_from_the_data_in_morphologizer_format(trained, target):
    tagger = trained[target][0].get_pipe("crf_morphologizer")
    assert tagger.labels == tuple(sorted(tagger.labels))
    assert tagger.label_data == tagger.labels
    assert set(FIRST_LABELS[target]) <= set(tagger.labels)
    assert len(tagger.labels) == 9
    if target == "pos+morph":
        # the labels spaCy's morphologizer collects from the same data
        nlp = spacy.blank("en")
        morphologizer = nlp.add_pipe("morphologizer")
        morphologizer.initialize(lambda: morph_examples(nlp))
        assert set(tagger.labels) == set(morphologizer.labels)


def test_add_label_normalizes_and_checks_the_label():
    tagger = make_nlp(factory="crf_morphologizer", target="morph").get_pipe("crf_morphologizer")
    assert tagger.add_label("Number=Plur|Case=Nom") == 1
    assert tagger.add_label("Case=Nom|Number=Plur") == 0
    assert tagger.add_label("") == 1
    assert tagger.labels == ("Case=Nom|Number=Plur", "_")
    with pytest.raises(ValueError, match=r"\[E019\].*'NOUN'.*\"morph\""):
        tagger.add_label("NOUN")

    tagger = make_nlp(factory="crf_morphologizer", target="pos+morph").get_pipe("crf_morphologizer")
    assert tagger.add_label("POS=NOUN|Number=Plur") == 1
    assert tagger.add_label("POS=PUNCT") == 1
    assert tagger.labels == ("Number=Plur|POS=NOUN", "POS=PUNCT")
    assert tagger.add_label("Number=Plur") == 1  # features alone, as spaCy's morphologizer takes them
    assert tagger.add_label("Feat=A") == 1
    with pytest.raises(ValueError, match=r"\[E019\].*'Number'.*\"pos\+morph\""):
        tagger.add_label("Number")  # not a FEATS string
    with pytest.raises(ValueError, match=r"\[E002\].*NOUNISH"):
        tagger.add_label("POS=NOUNISH|Number=Plur")
    with pytest.raises(ValueError, match=r"\[E002\]"):
        tagger.add_label("POS=NN")


def test_initialize_with_labels_argument_normalizes():
    nlp = make_nlp(factory="crf_morphologizer", target="pos+morph")
    tagger = nlp.get_pipe("crf_morphologizer")
    tagger.initialize(lambda: morph_examples(nlp), nlp=nlp, labels=["POS=PUNCT", "POS=NOUN|Number=Plur"])
    assert tagger.labels == ("POS=PUNCT", "Number=Plur|POS=NOUN")  # in this order


@pytest.mark.parametrize("target", ["morph", "pos+morph"])
def test_unset_morph_is_summed_over(target):
    """A token whose morph was never annotated is unknown ("morph": every
    label; "pos+morph": every bundle of its UPOS): its loss is the log of the
    summed probability of those labels there, never "no features"."""
    nlp = make_nlp(factory="crf_morphologizer", target=target)
    nlp.initialize(lambda: morph_examples(nlp))
    tagger = nlp.get_pipe("crf_morphologizer")
    labels = tagger.labels
    full = reference(nlp)
    unset = reference(nlp)
    unset[3].set_morph(None)  # "eggs": POS NOUN, morph unset
    assert not unset[3].has_morph() and full[4].has_morph() and str(full[4].morph) == ""
    predicted = nlp.make_doc("I like green eggs .")
    values = MORPH_TARGETS[target].gold_values(Example(predicted, unset))
    assert values == FIRST_LABELS[target][:3] + [""] + FIRST_LABELS[target][4:]

    scores = tagger.model.predict([predicted])
    loss, _ = tagger.get_loss([Example(predicted, unset)], scores)
    ids = numpy.asarray([labels.index(label) for label in FIRST_LABELS[target]], dtype="int64")
    none = numpy.full(len(ids), -1, dtype="int64")
    fixed = []
    for label_id in range(len(labels)):
        with_label = ids.copy()
        with_label[3] = label_id
        fixed.append(crf_batch_loss(scores, [with_label], [none])[0])
    agree = [i for i, label in enumerate(labels) if target == "morph" or split_bundle(label)[0] == "NOUN"]
    assert 1 < len(agree) < len(labels) or target == "morph"
    by_hand = -numpy.logaddexp.reduce(-numpy.asarray(fixed, dtype="float64")[agree])
    assert loss == pytest.approx(by_hand, rel=1e-4)
    unknown = ids.copy()
    unknown[3] = -1
    if target == "morph":
        assert loss == pytest.approx(crf_batch_loss(scores, [unknown], [none])[0], rel=1e-6)
    else:
        assert loss > crf_batch_loss(scores, [unknown], [none])[0]  # fewer paths agree
    # the annotated "." with no features is a label of its own ("_", "POS=PUNCT")
    full_loss, _ = tagger.get_loss([Example(predicted, full)], scores)
    assert full_loss == pytest.approx(fixed[ids[3]], rel=1e-6)
    assert full_loss > loss


def test_pos_morph_missing_half_or_misaligned_is_unknown():
    nlp = make_nlp(factory="crf_morphologizer", target="pos+morph")
    nlp.initialize(lambda: morph_examples(nlp))
    labels = nlp.get_pipe("crf_morphologizer").labels
    gold = reference(nlp)
    gold[0].pos = 0  # "I": morph without POS
    gold[1].set_morph(None)  # "like": POS without morph
    values = MORPH_TARGETS["pos+morph"].gold_values(Example(nlp.make_doc("I like green eggs ."), gold))
    assert values == ["", ""] + FIRST_LABELS["pos+morph"][2:]
    tags, _, unknown = gold_ids(values, labels)
    assert tags.tolist()[:2] == [-1, -1] and unknown == []
    misaligned = Example(nlp.make_doc("I like greeneggs ."), reference(nlp))
    assert MORPH_TARGETS["pos+morph"].gold_values(misaligned)[2] == ""
    assert MORPH_TARGETS["morph"].gold_values(misaligned) == FIRST_LABELS["morph"][:2] + ["", "_"]


@pytest.mark.parametrize("annotation", [{"pos": ["PRON", "VERB", "NOUN"]}, {"morphs": ["Case=Nom", "", "Number=Plur"]}])
def test_half_annotated_data_has_spacys_labels(annotation):
    """Data with UPOS and no features (or features and no UPOS) gives the
    labels spaCy's morphologizer gives it, and trains."""
    labels = {}
    for factory in ("crf_morphologizer", "morphologizer"):
        nlp = make_nlp(factory=factory) if factory.startswith("crf") else spacy.blank("en")
        if not factory.startswith("crf"):
            nlp.add_pipe("morphologizer")
        examples = [Example.from_dict(nlp.make_doc("I like eggs"), annotation)]
        nlp.initialize(lambda examples=examples: examples)
        labels[factory] = set(nlp.get_pipe(factory).labels)
        losses = {}
        nlp.update(examples, losses=losses)
        assert numpy.isfinite(losses[factory])
    assert labels["crf_morphologizer"] == labels["morphologizer"]


def test_negative_morph_labels():
    nlp = make_nlp(factory="crf_morphologizer", target="morph")
    nlp.initialize(lambda: morph_examples(nlp))
    labels = nlp.get_pipe("crf_morphologizer").labels
    gold = Doc(nlp.vocab, words=["eggs", "ham"], pos=["NOUN", "NOUN"], morphs=["!Number=Plur", "Number=Sing"])
    example = Example(nlp.make_doc("eggs ham"), gold)
    tags, excluded, _ = gold_ids(MORPH_TARGETS["morph"].gold_values(example), labels)
    assert tags.tolist() == [-1, labels.index("Number=Sing")]
    assert excluded.tolist() == [labels.index("Number=Plur"), -1]
    # "pos+morph": a negative half is unknown, as for "tag+pos"
    assert MORPH_TARGETS["pos+morph"].gold_values(example) == ["", "Number=Sing|POS=NOUN"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_overwrite(trained, overwrite):
    nlp, _ = trained["pos+morph"]
    tagger = nlp.get_pipe("crf_morphologizer")
    doc = Doc(nlp.vocab, words=["I", "like", "green", "eggs", "."])
    doc[0].pos_ = "NOUN"
    doc[0].set_morph("Foo=Bar")
    doc[2].set_morph("_")  # annotated: no features
    doc[3].pos_ = "X"
    tagger.cfg["overwrite"] = overwrite
    try:
        doc = tagger(doc)
    finally:
        tagger.cfg["overwrite"] = False
    gold = list(zip(MORPH_SENTENCES[0][1], MORPH_SENTENCES[0][2]))
    if overwrite:
        assert analyses(doc) == gold
    else:
        assert analyses(doc) == [("NOUN", "Foo=Bar"), gold[1], ("ADJ", ""), ("X", "Number=Plur"), gold[4]]


def hand_made_examples(vocab):
    words = ["a", "b", "c", "d", "e"]
    predicted = Doc(
        vocab,
        words=words,
        pos=["NOUN", "VERB", "NOUN", "NOUN", "PUNCT"],
        morphs=["Number=Plur", "Tense=Pres", "Degree=Pos", "Number=Plur", ""],
    )
    gold = Doc(
        vocab,
        words=words,
        pos=["NOUN", "VERB", "ADJ", "NOUN", "PUNCT"],
        morphs=["Number=Plur", "Tense=Past", "Degree=Pos", "Number=Sing", ""],
    )
    gold[4].set_morph(None)  # left out of morph_acc and pos_morph_acc
    return [Example(predicted, gold)]


def test_scorer_on_a_hand_made_example():
    nlp = make_nlp(factory="crf_morphologizer", target="pos+morph")
    examples = hand_made_examples(nlp.vocab)
    scores = nlp.get_pipe("crf_morphologizer").score(examples)
    assert scores == morphologizer_score(examples, target="pos+morph") == morph_scores(examples, target="pos+morph")
    assert set(scores) == {
        "pos_acc",
        "morph_acc",
        "morph_micro_p",
        "morph_micro_r",
        "morph_micro_f",
        "morph_per_feat",
        "pos_morph_acc",
    }
    assert scores["pos_acc"] == pytest.approx(4 / 5)
    assert scores["morph_acc"] == pytest.approx(2 / 4)
    assert scores["pos_morph_acc"] == pytest.approx(1 / 4)  # only "a" has both right
    per_feat = scores["morph_per_feat"]
    assert per_feat["Number"] == {"p": 0.5, "r": 0.5, "f": 0.5}
    assert per_feat["Tense"]["f"] == 0.0 and per_feat["Degree"]["f"] == 1.0
    assert scores["morph_micro_f"] == pytest.approx(2 / 4)

    morph_only = morphologizer_score(examples, target="morph")
    assert set(morph_only) == {"morph_acc", "morph_micro_p", "morph_micro_r", "morph_micro_f", "morph_per_feat"}
    assert morph_only["morph_acc"] == scores["morph_acc"]
    # the factory's weights are spaCy's morphologizer's
    weights = nlp.get_pipe_meta("crf_morphologizer").default_score_weights
    assert weights == {"pos_acc": 0.5, "morph_acc": 0.5, "morph_per_feat": None}
    assert weights == spacy.blank("en").get_factory_meta("morphologizer").default_score_weights


def test_spacy_train_with_cpu_morph_config(tmp_path):
    write_morph_docbin(tmp_path / "train.spacy")
    run_spacy(
        "train",
        str(CONFIGS / "cpu_morph.cfg"),
        "--output",
        str(tmp_path / "out"),
        "--paths.train",
        str(tmp_path / "train.spacy"),
        "--paths.dev",
        str(tmp_path / "train.spacy"),
        "--training.max_steps",
        "20",
        "--training.eval_frequency",
        "10",
    )
    nlp = spacy.load(tmp_path / "out" / "model-last")
    tagger = nlp.get_pipe("crf_morphologizer")
    assert tagger.cfg["target"] == "pos+morph"
    expected = {morph_bundle(p, m) for _, pos, morphs in MORPH_SENTENCES for p, m in zip(pos, morphs)}
    assert set(tagger.labels) == expected
    doc = nlp("I like green ham .")
    for token in doc:
        assert morph_bundle(token.pos_, str(token.morph)) in expected and token.has_morph()
    output = run_spacy("evaluate", str(tmp_path / "out" / "model-last"), str(tmp_path / "train.spacy"))
    assert "POS" in output and "MORPH" in output


def test_learns_from_half_annotated_tokens():
    """Tokens annotated with only a UPOS or only features: the loss sums over
    the bundles that agree with the known half, so the missing half is
    learnt from the labels the other sentences taught ("ate" is known only
    by its features, "They" only by its UPOS)."""
    fix_random_seed(0)
    nlp = make_nlp(factory="crf_morphologizer", target="pos+morph")
    examples = morph_examples(nlp, MORPH_SENTENCES[:2])
    words = ["They", "ate", "ham", "."]
    half = Doc(nlp.vocab, words=words)
    half[0].pos_ = "PRON"
    half[1].set_morph("Tense=Pres|VerbForm=Fin")
    half[2].set_morph("Number=Sing")
    half[3].pos_ = "PUNCT"
    assert [MORPH_TARGETS["pos+morph"].gold_values(Example(nlp.make_doc(" ".join(words)), half))] == [[""] * 4]
    examples += [Example(nlp.make_doc(" ".join(words)), half)] * 2
    train(nlp, examples, steps=100)
    tagger = nlp.get_pipe("crf_morphologizer")
    assert len(tagger.labels) == 7  # the two full sentences' bundles: no half made a label of its own
    assert analyses(nlp("They ate ham .")) == [
        ("PRON", "Case=Nom|Number=Sing|Person=1"),
        ("VERB", "Tense=Pres|VerbForm=Fin"),
        ("NOUN", "Number=Sing"),
        ("PUNCT", ""),
    ]


def test_features_only_token_sums_over_the_bundles_with_those_features():
    nlp = make_nlp(factory="crf_morphologizer", target="pos+morph")
    nlp.initialize(lambda: morph_examples(nlp))
    tagger = nlp.get_pipe("crf_morphologizer")
    labels = tagger.labels
    gold = reference(nlp)
    gold[2].pos = 0  # "green": Degree=Pos, no UPOS
    predicted = nlp.make_doc("I like green eggs .")
    scores = tagger.model.predict([predicted])
    loss, _ = tagger.get_loss([Example(predicted, gold)], scores)
    ids = numpy.asarray([labels.index(label) for label in FIRST_LABELS["pos+morph"]], dtype="int64")
    none = numpy.full(len(ids), -1, dtype="int64")
    agree = [i for i, label in enumerate(labels) if split_bundle(label)[1] == "Degree=Pos"]
    fixed = []
    for label_id in agree:
        ids[2] = label_id
        fixed.append(crf_batch_loss(scores, [ids.copy()], [none])[0])
    assert loss == pytest.approx(-numpy.logaddexp.reduce(-numpy.asarray(fixed, dtype="float64")), rel=1e-4)
