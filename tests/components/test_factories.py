"""The three factories: each declares only its own settings, assignments and
scores; each learns a tiny data set and round-trips through bytes and disk
with equal weights (spaCy's overfitting-IO test); crf_tagger's 0.x targets
build the new components."""

import warnings

import numpy
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from spacy_crf.components import CRFEntityRecognizer, CRFMorphologizer, CRFTagger
from spacy_crf.components.settings import TAGGER_0X_SETTINGS

from ..helpers import assert_same_weights

MODEL = {
    "@architectures": "spacy_crf.BiLSTMCRF.v4",
    "hidden_width": 16,
    "depth": 1,
    "dropout": 0.0,
    "input_dropout": 0.0,
    "crf": True,
    "chunk_size": 512,
    "transitions": "full",
    "emissions": "full",
    "tok2vec": {
        "@architectures": "spacy_crf.HashCharEmbed.v5",
        "width": 16,
        "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
        "rows": [500, 100, 100, 50],
        "nM": 8,
        "nC": 4,
        "include_static_vectors": False,
        "min_count": 0,
        "word_dropout": 0.0,
        "sum_byte_gradients": True,
        "word_encoder": None,
    },
}
WORDS = [["I", "like", "green", "eggs", "in", "Berlin"], ["Eat", "blue", "ham", "in", "Rome"]]
GOLD = [
    {
        "tags": ["PRP", "VBP", "JJ", "NNS", "IN", "NNP"],
        "pos": ["PRON", "VERB", "ADJ", "NOUN", "ADP", "PROPN"],
        "morphs": ["Case=Nom|Person=1", "Tense=Pres", "Degree=Pos", "Number=Plur", "_", "Number=Sing"],
        "entities": ["O", "O", "O", "O", "O", "U-LOC"],
    },
    {
        "tags": ["VB", "JJ", "NN", "IN", "NNP"],
        "pos": ["VERB", "ADJ", "NOUN", "ADP", "PROPN"],
        "morphs": ["Mood=Imp", "Degree=Pos", "Number=Sing", "_", "Number=Sing"],
        "entities": ["O", "O", "O", "O", "U-LOC"],
    },
]
# what each factory writes, read back from a doc
READ = {
    "crf_tagger": lambda doc: [t.tag_ for t in doc],
    "crf_morphologizer": lambda doc: [(t.pos_, str(t.morph)) for t in doc],
    "crf_ner": lambda doc: [(e.start, e.end, e.label_) for e in doc.ents],
}
OWN = {
    "crf_tagger": {
        "model",
        "target",
        "overwrite",
        "constraints",
        "window",
        "by_sentence",
        "batch_words",
        "store_confidence",
        "threads",
        "quantize",
        "learn_new_labels",
        "scorer",
    },
    "crf_morphologizer": {
        "model",
        "target",
        "overwrite",
        "extend",
        "label_smoothing",
        "window",
        "by_sentence",
        "batch_words",
        "store_confidence",
        "threads",
        "quantize",
        "learn_new_labels",
        "scorer",
    },
    "crf_ner": {
        "model",
        "scheme",
        "incorrect_spans_key",
        "store_entity_probs",
        "threshold",
        "candidates_key",
        "candidates_threshold",
        "overwrite",
        "window",
        "by_sentence",
        "batch_words",
        "store_confidence",
        "threads",
        "quantize",
        "learn_new_labels",
        "scorer",
    },
}
ASSIGNS = {
    "crf_tagger": ["token.tag", "token.pos"],
    "crf_morphologizer": ["token.pos", "token.morph", "token.tag"],
    "crf_ner": ["doc.ents", "token.ent_iob", "token.ent_type"],
}
WEIGHTS = {
    "crf_tagger": {"tag_acc": 1.0, "pos_acc": None},
    "crf_morphologizer": {"pos_acc": 0.5, "morph_acc": 0.5, "morph_per_feat": None},
    "crf_ner": {"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None},
}
CLASSES = {"crf_tagger": CRFTagger, "crf_morphologizer": CRFMorphologizer, "crf_ner": CRFEntityRecognizer}
FACTORIES = list(CLASSES)


def make(factory, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, config={"model": MODEL, **config})
    return nlp


def examples(nlp):
    return [Example.from_dict(Doc(nlp.vocab, words=words), gold) for words, gold in zip(WORDS, GOLD)]


@pytest.mark.parametrize("factory", FACTORIES)
def test_each_factory_declares_only_its_own_settings_assignments_and_scores(factory):
    meta = Language.get_factory_meta(factory)
    assert set(meta.default_config) == OWN[factory]
    assert meta.assigns == ASSIGNS[factory]
    assert meta.default_score_weights == WEIGHTS[factory]
    nlp = spacy.blank("en")
    assert type(nlp.add_pipe(factory)) is CLASSES[factory]
    filled = set(nlp.config["components"][factory]) - {"factory"}
    # crf_tagger's 0.x entity settings stay accepted (0.x configs load): filled in, never needed
    assert filled == OWN[factory] | ({s.name for s in TAGGER_0X_SETTINGS} if factory == "crf_tagger" else set())


@pytest.mark.parametrize("factory", FACTORIES)
def test_overfitting_io(factory, tmp_path):
    """Learn two sentences; the predictions and weights survive to_bytes and to_disk."""
    fix_random_seed(0)
    nlp = make(factory)
    train = examples(nlp)
    nlp.initialize(lambda: train)
    optimizer = Adam(0.01)
    for _ in range(60):
        losses = nlp.update(train, sgd=optimizer)
    assert losses[factory] < 0.5
    texts = [" ".join(words) for words in WORDS]
    predicted = [READ[factory](doc) for doc in nlp.pipe(texts)]
    for words, _gold, got in zip(WORDS, GOLD, predicted):
        expected = READ[factory](examples(nlp)[WORDS.index(words)].reference)
        assert got == expected
    scores = nlp.evaluate(train)
    assert all(scores[key] == 1.0 for key, weight in WEIGHTS[factory].items() if weight)

    again = make(factory)
    again.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe(factory), again.get_pipe(factory))
    assert [READ[factory](doc) for doc in again.pipe(texts)] == predicted
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert type(loaded.get_pipe(factory)) is CLASSES[factory]
    assert_same_weights(nlp.get_pipe(factory), loaded.get_pipe(factory))
    assert [READ[factory](doc) for doc in loaded.pipe(texts)] == predicted


@pytest.mark.parametrize("factory", FACTORIES)
def test_the_scores_are_the_components_own(factory):
    """No training log shows another component's keys at 0.00."""
    fix_random_seed(0)
    nlp = make(factory)
    train = examples(nlp)
    nlp.initialize(lambda: train)
    scores = nlp.get_pipe(factory).score(train)
    own = {"crf_tagger": "tag_acc", "crf_morphologizer": "morph_acc", "crf_ner": "ents_f"}
    assert own[factory] in scores
    for other, key in own.items():
        if other != factory:
            assert key not in scores


@pytest.mark.parametrize(
    "target,cls",
    [
        ("pos+morph", CRFMorphologizer),
        ("morph", CRFMorphologizer),
        ("tag+pos+morph", CRFMorphologizer),
        ("ents", CRFEntityRecognizer),
    ],
)
def test_crf_tagger_with_a_0x_target_builds_the_new_component(target, cls):
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match=r"W003.*crf_(morphologizer|ner)"):
        component = nlp.add_pipe("crf_tagger", config={"model": MODEL, "target": target, "ents_threshold": 0.0})
    assert type(component) is cls and component.cfg["target"] == target
    if cls is CRFEntityRecognizer:
        assert component.cfg["scheme"] == "BILUO"  # 0.x's "auto" and crf_tagger's default "none"


def test_crf_tagger_0x_entity_settings_map_to_crf_ner():
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="W003"):
        ner = nlp.add_pipe(
            "crf_tagger",
            config={
                "model": MODEL,
                "target": "ents",
                "constraints": "IOBES",
                "ents_threshold": 0.4,
                "store_entity_probs": True,
                "candidates_key": "c",
                "candidates_threshold": 0.3,
                "incorrect_spans_key": "rejected",
            },
        )
    expected = {
        "scheme": "IOBES",
        "threshold": 0.4,
        "store_entity_probs": True,
        "candidates_key": "c",
        "candidates_threshold": 0.3,
        "incorrect_spans_key": "rejected",
    }
    assert {key: ner.cfg[key] for key in expected} == expected


def test_entity_settings_on_a_tag_target_and_a_scheme_on_morphology_are_coded_errors():
    with pytest.raises(ValueError, match="E020"):
        make("crf_tagger", store_entity_probs=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="E037"):
            make("crf_tagger", target="pos+morph", constraints="BIO")
    with pytest.raises(ValueError, match="E039"):
        make("crf_morphologizer", target="tag")
    with pytest.raises(ValueError, match="E039"):
        make("crf_ner", scheme="none")


def test_crf_tagger_keeps_a_chunk_scheme():
    """crf_tagger's constraints hold for tag sets of a scheme (e.g. chunks)."""
    fix_random_seed(0)
    nlp = make("crf_tagger", constraints="BIO")
    chunks = [["B-NP", "B-VP", "B-NP", "I-NP", "B-PP", "B-NP"], ["B-VP", "B-NP", "I-NP", "B-PP", "B-NP"]]
    train = [Example.from_dict(Doc(nlp.vocab, words=w), {"tags": t}) for w, t in zip(WORDS, chunks)]
    nlp.initialize(lambda: train)
    tagger = nlp.get_pipe("crf_tagger")
    for labels, _ in [pair for doc in tagger.nbest([Doc(nlp.vocab, words=WORDS[0])], 20) for pair in doc]:
        assert not labels[0].startswith("I-")
        for previous, label in zip(labels, labels[1:]):
            assert not label.startswith("I-") or previous[2:] == label[2:]
    numpy.testing.assert_allclose(tagger.marginals([Doc(nlp.vocab, words=WORDS[1])])[0].sum(axis=1), 1.0, rtol=1e-5)
