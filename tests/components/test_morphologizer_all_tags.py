"""crf_morphologizer, target "tag+pos+morph": XPOS, UPOS and features from one CRF over the
(tag, bundle) pairs of the training data (UDPipe's AllTags), written to
token.tag_, token.pos_ and token.morph."""

import json

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.corpus.pipeline import outputs_of
from spacy_crf.scoring import morph_scores, morphologizer_score
from spacy_crf.targets import MORPH_TARGETS, gold_ids, label_classes, label_parts

from ..helpers import MORPH_SENTENCES, assert_same_weights, make_nlp, train
from ..ml.test_composed_emissions import COMPOSED

# PTB tags of MORPH_SENTENCES
TAGS = [["PRP", "VBP", "JJ", "NNS", "."], ["VB", "JJ", "NN", "."], ["PRP", "VBD", "NN", "."]]
SENTENCES = [(words, tags, pos, morphs) for (words, pos, morphs), tags in zip(MORPH_SENTENCES, TAGS)]
TEST_TEXTS = ["I like blue ham .", "They eat green eggs", "ham", "", "Eat green eggs !"]
TARGET = MORPH_TARGETS["tag+pos+morph"]


def examples_of(nlp, sentences=SENTENCES):
    return [
        Example(nlp.make_doc(" ".join(words)), Doc(nlp.vocab, words=words, tags=tags, pos=pos, morphs=morphs))
        for words, tags, pos, morphs in sentences
    ]


def all_tags(doc):
    return [(token.tag_, token.pos_, str(token.morph)) for token in doc]


@pytest.fixture(scope="module", params=["full", "composed"])
def trained(request):
    fix_random_seed(0)
    model = COMPOSED if request.param == "composed" else None
    nlp = make_nlp(model=model, factory="crf_morphologizer", target="tag+pos+morph")
    losses = train(nlp, examples_of(nlp), steps=100)
    return nlp, losses, model


def test_overfitting_IO(trained, tmp_path):
    nlp, losses, model = trained
    assert losses["crf_morphologizer"] < 2.5
    for words, tags, pos, morphs in SENTENCES:
        assert all_tags(nlp(" ".join(words))) == list(zip(tags, pos, morphs))
    expected = [all_tags(doc) for doc in map(nlp, TEST_TEXTS)]

    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp2.get_pipe("crf_morphologizer"))
    assert nlp2.get_pipe("crf_morphologizer").labels == nlp.get_pipe("crf_morphologizer").labels
    assert [all_tags(doc) for doc in map(nlp2, TEST_TEXTS)] == expected
    nlp3 = make_nlp(model=model, factory="crf_morphologizer", target="tag+pos+morph")
    nlp3.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe("crf_morphologizer"), nlp3.get_pipe("crf_morphologizer"))
    assert [all_tags(doc) for doc in map(nlp3, TEST_TEXTS)] == expected
    for batch_size in (1, 64):
        assert [all_tags(doc) for doc in nlp.pipe(TEST_TEXTS, batch_size=batch_size)] == expected

    scores = nlp.evaluate(examples_of(nlp))
    for key in ("tag_acc", "pos_acc", "morph_acc", "pos_morph_acc", "tag_pos_morph_acc"):
        assert scores[key] == 1.0, key


def test_labels_are_tag_space_bundle(trained):
    tagger = trained[0].get_pipe("crf_morphologizer")
    assert tagger.labels == tuple(sorted(tagger.labels))
    assert {"PRP Case=Nom|Number=Sing|POS=PRON|Person=1", "NNS Number=Plur|POS=NOUN", ". POS=PUNCT"} <= set(
        tagger.labels
    )
    assert len(tagger.labels) == 9  # one tag per bundle here: "." and "!" share ". POS=PUNCT"
    assert outputs_of(trained[0]).targets == ("morph", "pos", "tag")


def test_classes_are_upos_and_parts_are_tag_upos_features():
    labels = ["NNS Number=Plur|POS=NOUN", "NN Number=Sing|POS=NOUN", "VB Mood=Imp|POS=VERB|VerbForm=Fin"]
    assert label_classes(TARGET, labels) == [0, 0, 1]
    parts = [
        "Mood=Imp",
        "Number=Plur",
        "Number=Sing",
        "POS=NOUN",
        "POS=VERB",
        "TAG=NN",
        "TAG=NNS",
        "TAG=VB",
        "VerbForm=Fin",
    ]
    assert label_parts(TARGET, labels) == [[6, 1, 3], [5, 2, 3], [7, 0, 4, 8]]
    assert parts == sorted(parts)


def test_a_tag_with_bars_or_spaces_splits_at_the_last_space():
    label = TARGET.expand_label("N|soort|ev POS=NOUN|Number=Sing")[0]
    assert label == "N|soort|ev Number=Sing|POS=NOUN"
    assert TARGET.split(label) == ("N|soort|ev", "NOUN", "Number=Sing")
    assert TARGET.split("A B POS=X") == ("A B", "X", "_")
    assert TARGET.accepts(label) and not TARGET.accepts("NN POS=NOTAPOS")


@pytest.mark.parametrize(
    "label",
    [
        "Number=Sing|POS=NOUN",
        "NN Number=Sing",
        "NN",
        " POS=NOUN",
        "NN POS=NOUN|Broken",
        "!NN POS=NOUN",
        "NN  POS=NOUN",
        "NN Foo=a b|POS=NOUN",
    ],
)
def test_add_label_refuses_what_is_not_tag_space_bundle(label):
    tagger = make_nlp(factory="crf_morphologizer", target="tag+pos+morph").get_pipe("crf_morphologizer")
    with pytest.raises(ValueError, match=r"\[E019\]"):
        tagger.add_label(label)


def test_a_missing_or_negative_part_makes_the_token_unknown():
    nlp = make_nlp(factory="crf_morphologizer", target="tag+pos+morph")
    words, tags, pos, morphs = SENTENCES[0]
    gold = Doc(nlp.vocab, words=words, tags=tags, pos=pos, morphs=morphs)
    gold[0].tag_ = ""  # "I": no tag
    gold[1].pos = 0  # "like": no UPOS
    gold[2].set_morph(None)  # "green": morph never annotated
    gold[3].tag_ = "!NN"  # "eggs": a negative tag
    values = TARGET.gold_values(Example(nlp.make_doc(" ".join(words)), gold))
    assert values == ["", "", "", "", ". POS=PUNCT"]
    tags_ids, excluded, unknown = gold_ids(values, [". POS=PUNCT"])
    assert tags_ids.tolist() == [-1, -1, -1, -1, 0] and excluded.tolist() == [-1] * 5 and unknown == []
    misaligned = Example(
        nlp.make_doc("I like greeneggs ."), Doc(nlp.vocab, words=words, tags=tags, pos=pos, morphs=morphs)
    )
    assert TARGET.gold_values(misaligned)[2] == ""


def test_write_takes_any_sequence_of_labels():
    nlp = make_nlp(factory="crf_morphologizer", target="tag+pos+morph")
    doc = nlp.make_doc("a b")
    labels = numpy.asarray(["NN Number=Sing|POS=NOUN", "VB POS=VERB"])
    TARGET.write(nlp.vocab, [doc], labels, [numpy.asarray([1, 0])], overwrite=False)
    assert all_tags(doc) == [("VB", "VERB", ""), ("NN", "NOUN", "Number=Sing")]
    empty = nlp.make_doc("")
    TARGET.write(nlp.vocab, [empty], [], [numpy.zeros(0, dtype="int64")], overwrite=False)
    assert len(empty) == 0


def test_labels_given_in_any_form_are_normalized(tmp_path):
    nlp = make_nlp(factory="crf_morphologizer", target="tag+pos+morph")
    examples = examples_of(nlp)
    labels = ["NNS POS=NOUN|Number=Plur", "N|soort PROPN POS=PROPN"]
    nlp.get_pipe("crf_morphologizer").initialize(lambda: examples, nlp=nlp, labels=labels)
    assert nlp.get_pipe("crf_morphologizer").labels == (
        "NNS Number=Plur|POS=NOUN",
        "N|soort PROPN POS=PROPN",
    )  # given order


def test_corpus_rows_have_tags_pos_and_morphs(trained, tmp_path):
    from spacy_crf.corpus import tag_corpus

    nlp = trained[0]
    nlp.to_disk(tmp_path / "model")
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEST_TEXTS))
    )
    tag_corpus(tmp_path / "model", tmp_path / "in.jsonl", tmp_path / "out", output_format="jsonl", progress=False)
    rows = [
        json.loads(line)
        for path in (tmp_path / "out").glob("in.jsonl.*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sorted(row["id"] for row in rows) == list(range(len(TEST_TEXTS)))
    for row in rows:
        doc = nlp(TEST_TEXTS[row["id"]])
        assert list(zip(row["tags"], row["pos"], row["morphs"])) == all_tags(doc)


def test_overwrite_false_keeps_each_attribute_a_doc_has(trained):
    nlp = trained[0]
    doc = Doc(nlp.vocab, words=["I", "like", "green", "eggs", "."])
    doc[0].tag_ = "XX"
    doc[1].pos_ = "X"
    doc[2].set_morph("Foo=Bar")
    morphologizer = nlp.get_pipe("crf_morphologizer")
    morphologizer.cfg["overwrite"] = False  # the default is spaCy's morphologizer's, true
    try:
        doc = morphologizer(doc)
    finally:
        morphologizer.cfg["overwrite"] = True
    gold = list(zip(*SENTENCES[0][1:]))
    assert (
        all_tags(doc) == [("XX",) + gold[0][1:], (gold[1][0], "X", gold[1][2]), gold[2][:2] + ("Foo=Bar",)] + gold[3:]
    )


def test_scorer_on_a_hand_made_example():
    vocab = spacy.blank("en").vocab
    words = ["a", "b", "c", "d"]
    predicted = Doc(
        vocab,
        words=words,
        tags=["NN", "VB", "NN", "NNS"],
        pos=["NOUN", "VERB", "NOUN", "NOUN"],
        morphs=["Number=Sing", "VerbForm=Inf", "Number=Sing", "Number=Plur"],
    )
    gold = Doc(
        vocab,
        words=words,
        tags=["NN", "VBP", "NN", "NNS"],
        pos=["NOUN", "VERB", "PROPN", "NOUN"],
        morphs=["Number=Sing", "VerbForm=Inf", "Number=Sing", "Number=Sing"],
    )
    scores = morphologizer_score([Example(predicted, gold)], target="tag+pos+morph")
    assert scores == morph_scores([Example(predicted, gold)], target="tag+pos+morph")
    assert scores["tag_acc"] == pytest.approx(3 / 4)
    assert scores["pos_acc"] == pytest.approx(3 / 4)
    assert scores["morph_acc"] == pytest.approx(3 / 4)
    assert scores["pos_morph_acc"] == pytest.approx(2 / 4)  # a, b
    assert scores["tag_pos_morph_acc"] == pytest.approx(1 / 4)  # a only
    assert "tag_pos_morph_acc" not in morphologizer_score([Example(predicted, gold)], target="pos+morph")
    # the component scores with its target: tag_acc and tag_pos_morph_acc too
    nlp = make_nlp(factory="crf_morphologizer", target="tag+pos+morph")
    assert nlp.get_pipe("crf_morphologizer").score([Example(predicted, gold)]) == scores


def test_paired_test_compares_all_three():
    from benchmarks.paired_test import value

    doc = Doc(
        spacy.blank("en").vocab, words=["eggs", "x"], tags=["NNS", "XX"], pos=["NOUN", "X"], morphs=["Number=Plur", ""]
    )
    doc[1].set_morph(None)
    assert value(doc[0], "tag+pos+morph") == "NNS NOUN|Number=Plur"
    assert value(doc[1], "tag+pos+morph") == ""  # morph never annotated: left out


def test_paired_test_compares_each_value_from_one_tagging():
    from benchmarks.paired_test import compare

    vocab = spacy.blank("en").vocab
    gold = [Doc(vocab, words=["a", "b", "c"], pos=["NOUN", "VERB", "X"], morphs=["Number=Sing", "", "_"])]
    gold[0][2].set_morph(None)  # no gold features: left out of "morph"
    a = [Doc(vocab, words=["a", "b", "c"], pos=["NOUN", "NOUN", "X"], morphs=["Number=Sing", "", "Foo=Bar"])]
    b = [Doc(vocab, words=["a", "b", "c"], pos=["VERB", "VERB", "X"], morphs=["Number=Plur", "", ""])]
    pos, morph = compare(gold, a, b, "pos_"), compare(gold, a, b, "morph")
    assert (pos["tokens"], pos["only_a_right"], pos["only_b_right"], pos["attr"]) == (3, 1, 1, "pos_")
    assert (morph["tokens"], morph["only_a_right"], morph["only_b_right"]) == (2, 1, 0)
    assert morph["acc_a"] == 100.0 and morph["acc_b"] == 50.0


def test_morph_errors_counts_each_feature_and_the_errors_a_right_tag_leaves():
    from benchmarks.morph_errors import feats_errors

    vocab = spacy.blank("en").vocab
    words = ["it", "runs", "who", "x", "cats", "capt.", "so", "the"]
    gold = [
        Doc(
            vocab,
            words=words,
            tags=["PRP", "VBZ", "WP", "XX", "NNS", "NNP", "RB", "DT"],
            pos=["PRON", "VERB", "PRON", "X", "NOUN", "PROPN", "ADV", "DET"],
            morphs=["Case=Acc|Number=Sing", "Number=Sing|Tense=Pres", "PronType=Rel", "", "Number=Plur", "_", "_", "_"],
        )
    ]
    gold[0][3].set_morph(None)  # no gold features: left out
    predicted = [
        Doc(
            vocab,
            words=words,
            tags=["PRP", "VBP", "WP", "XX", "NNS", "NNP", "RB", "DT"],
            pos=["PRON", "VERB", "PRON", "X", "NOUN", "PROPN", "SCONJ", "DET"],
            morphs=[
                "Case=Nom|Number=Sing",
                "Tense=Pres",
                "PronType=Int",
                "Foo=Bar",
                "Number=Plur",
                "Abbr=Yes",
                "Degree=Pos",
                "_",
            ],
        )
    ]
    predicted[0][7].set_morph(None)  # no features predicted: wrong, though the gold has none either
    result = feats_errors(gold, predicted)
    assert (result["tokens"], result["feats_errors"], result["feats_accuracy"]) == (7, 6, 14.29)
    # "runs" lost Number with its tag, "so" gained Degree with a wrong UPOS; the rest had the right tags
    assert (result["with_pos_error"], result["with_tag_error"], result["feats_only"]) == (1, 1, 4)
    assert result["per_feature"] == {"Abbr": 1, "Case": 1, "Degree": 1, "Number": 1, "PronType": 1}
    assert result["feats_only_errors"] == {
        "it: Case=Acc -> Case=Nom": 1,
        "who: PronType=Rel -> PronType=Int": 1,
        "capt.: _ -> Abbr=Yes": 1,
        "the: _ -> (none)": 1,
    }
    # a model without tags: FEATS-only means a right UPOS, and no tag errors are counted
    untagged = [
        Doc(
            vocab,
            words=words,
            pos=["PRON", "VERB", "PRON", "X", "NOUN", "PROPN", "ADV", "DET"],
            morphs=["Case=Nom|Number=Sing", "Tense=Pres", "PronType=Int", "", "_", "_", "_", "Definite=Def"],
        )
    ]
    result = feats_errors(gold, untagged, top=1)
    assert result["with_tag_error"] is None and result["with_pos_error"] == 0 and result["feats_only"] == 5
    assert result["per_feature"] == {"Number": 2, "Case": 1, "PronType": 1, "Definite": 1}
    assert result["feats_only_errors"] == {"it: Case=Acc -> Case=Nom": 1}  # ties keep the order met
    with pytest.raises(ValueError):
        feats_errors(gold, [Doc(vocab, words=["it"])])
