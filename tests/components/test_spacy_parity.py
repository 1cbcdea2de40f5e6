"""Where crf_ner and crf_morphologizer behave as spaCy's ner and
morphologizer do: an initialized, never-updated crf_ner writes no entity
(even beside an entity ruler), and crf_morphologizer's overwrite / extend."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.components.settings import MORPHOLOGIZER_SETTINGS

from ..helpers import SMALL_MODEL, make_nlp, train

NER_DATA = [
    ("Anna lives in Rome", [(0, 4, "PER"), (14, 18, "LOC")]),
    ("Rome loves Anna", [(0, 4, "LOC"), (11, 15, "PER")]),
]


def ner_examples(nlp):
    return [Example.from_dict(nlp.make_doc(text), {"entities": ents}) for text, ents in NER_DATA]


@pytest.mark.parametrize("store_entity_probs", [False, True])
def test_an_untrained_crf_ner_writes_no_entity(store_entity_probs):
    texts = ["Anna lives in Rome"] * 3 + ["a b c d e f g h i j k l m n o p"]
    for seed in range(5):  # its random weights would tag entities on some seeds
        spacy.util.fix_random_seed(seed)
        nlp = make_nlp(factory="crf_ner", store_entity_probs=store_entity_probs, candidates_key="cands")
        nlp.initialize(get_examples=lambda nlp=nlp: ner_examples(nlp))
        for doc in nlp.pipe(texts):
            assert doc.ents == ()
            assert [token.ent_iob_ for token in doc] == ["O"] * len(doc)
            assert len(doc.spans["cands"]) == 0
        # an entity ruler's entities stay as they are
        ruler_nlp = make_nlp(factory="crf_ner")
        ruler = ruler_nlp.add_pipe("entity_ruler", first=True)
        ruler_nlp.initialize(get_examples=lambda nlp=ruler_nlp: ner_examples(nlp))
        ruler.add_patterns([{"label": "CITY", "pattern": "Rome"}])
        doc = ruler_nlp("Anna lives in Rome")
        assert [(e.text, e.label_) for e in doc.ents] == [("Rome", "CITY")]


def test_crf_ner_writes_entities_once_updated_and_the_state_is_saved(tmp_path):
    spacy.util.fix_random_seed(0)
    nlp = make_nlp(factory="crf_ner")
    nlp.initialize(get_examples=lambda nlp=nlp: ner_examples(nlp))
    nlp.to_disk(tmp_path / "untrained")
    assert spacy.load(tmp_path / "untrained")("Anna lives in Rome").ents == ()
    train(nlp, ner_examples(nlp), steps=40)
    assert nlp.get_pipe("crf_ner").cfg["trained"] is True
    assert [e.label_ for e in nlp("Anna lives in Rome").ents] == ["PER", "LOC"]
    nlp.to_disk(tmp_path / "trained")
    assert [e.label_ for e in spacy.load(tmp_path / "trained")("Anna lives in Rome").ents] == ["PER", "LOC"]


def test_crf_morphologizer_defaults_to_spacys_overwrite_and_extend():
    defaults = {setting.name: setting.default for setting in MORPHOLOGIZER_SETTINGS}
    spacys = spacy.Language.get_factory_meta("morphologizer").default_config
    assert defaults["overwrite"] == spacys["overwrite"] is True
    assert defaults["extend"] == spacys["extend"] is False
    assert defaults["label_smoothing"] == spacys["label_smoothing"] == 0.0


MORPH_DATA = [
    ("I like eggs", {"pos": ["PRON", "VERB", "NOUN"], "morphs": ["Case=Nom|Person=1", "Tense=Pres", "Number=Plur"]}),
    ("eggs like me", {"pos": ["NOUN", "VERB", "PRON"], "morphs": ["Number=Plur", "Tense=Pres", "Case=Acc|Person=1"]}),
]


@pytest.mark.parametrize(
    "overwrite,extend,expected",
    [
        (True, False, "Number=Plur"),  # replaced
        (False, False, "Foo=Bar|Number=Sing"),  # kept
        (True, True, "Foo=Bar|Number=Plur"),  # merged, the prediction wins
        (False, True, "Foo=Bar|Number=Sing"),  # merged, the token's own wins
    ],
)
def test_crf_morphologizer_overwrite_and_extend_as_spacys(overwrite, extend, expected):
    spacy.util.fix_random_seed(0)
    nlp = make_nlp(factory="crf_morphologizer", model={**SMALL_MODEL}, overwrite=overwrite, extend=extend)
    examples = [Example.from_dict(nlp.make_doc(text), annots) for text, annots in MORPH_DATA]
    train(nlp, examples, steps=60)
    morphologizer = nlp.get_pipe("crf_morphologizer")
    doc = Doc(nlp.vocab, words=["I", "like", "eggs"])
    assert [t.morph.to_dict() for t in morphologizer(Doc(nlp.vocab, words=["I", "like", "eggs"]))][2] == {
        "Number": "Plur"
    }
    doc[2].set_morph("Number=Sing|Foo=Bar")
    morphologizer(doc)
    assert str(doc[2].morph) == expected
    assert numpy.all([t.pos_ for t in doc] != "")
