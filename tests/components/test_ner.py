"""crf_ner: a named entity recogniser writing doc.ents through the tags of a scheme."""

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.targets import EntityTarget, entity_tags, gold_ids, tags_to_spans

from ..helpers import SMALL_MODEL, make_nlp, train, valid_reference

NER_DATA = [
    ("Anna lives in New York City", [(0, 4, "PER"), (14, 27, "LOC")]),
    ("New York loves Anna Smith", [(0, 8, "LOC"), (15, 25, "PER")]),
    ("I like Berlin", [(7, 13, "LOC")]),
]


def ner_examples(nlp, data=NER_DATA):
    return [Example.from_dict(nlp.make_doc(text), {"entities": ents}) for text, ents in data]


def ents_of(doc):
    return [(e.start_char, e.end_char, e.label_) for e in doc.ents]


@pytest.mark.parametrize("scheme", [None, "BILUO", "BIO", "IOBES"])
def test_ner_overfitting_and_roundtrip(scheme, tmp_path):
    """None: the factory's default scheme, BILUO."""
    nlp = make_nlp(factory="crf_ner", **({} if scheme is None else {"scheme": scheme}))
    examples = ner_examples(nlp)
    train(nlp, examples, steps=80)
    tagger = nlp.get_pipe("crf_ner")
    assert tagger.cfg["scheme"] == (scheme or "BILUO") and tagger.target.scheme == tagger.cfg["scheme"]
    assert "O" in tagger.tags and ("U-PER" in tagger.tags) == (scheme in (None, "BILUO"))
    for text, ents in NER_DATA:
        assert ents_of(nlp(text)) == ents
    scores = nlp.evaluate(examples)
    assert scores["ents_f"] == 1.0
    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    for text, ents in NER_DATA:
        assert ents_of(nlp2(text)) == ents


def test_missing_entity_annotation_is_partial():
    nlp = make_nlp(factory="crf_ner")
    examples = ner_examples(nlp)
    nlp.initialize(lambda: examples)
    tagger = nlp.get_pipe("crf_ner")
    doc = nlp.make_doc("Anna lives in Rome")
    reference = Doc(nlp.vocab, words=["Anna", "lives", "in", "Rome"], ents=["B-PER", "O", "O", ""])
    tags, _, _ = gold_ids(EntityTarget("BILUO").gold_values(Example(doc, reference)), tagger.tags)
    assert tags[3] == -1 and tags[0] == tagger.tags.index("U-PER")
    unannotated = Example(nlp.make_doc("Rome"), nlp.make_doc("Rome"))
    scores = tagger.model.predict([unannotated.predicted])
    assert tagger.get_loss([unannotated], scores)[0] == 0.0


def test_overwrite_keeps_existing_entities():
    nlp = make_nlp(factory="crf_ner")
    train(nlp, ner_examples(nlp), steps=80)
    doc = nlp.make_doc("Anna lives in New York City")
    doc.ents = [doc.char_span(0, 4, label="CUSTOM")]
    doc = nlp.get_pipe("crf_ner")(doc)
    assert ents_of(doc) == [(0, 4, "CUSTOM"), (14, 27, "LOC")]


def test_add_label_with_entity_type():
    nlp = make_nlp(factory="crf_ner", scheme="BIO")
    tagger = nlp.get_pipe("crf_ner")
    assert tagger.add_label("PER") == 1
    assert tagger.tags == ("B-PER", "I-PER", "O")
    assert tagger.add_label("PER") == 0
    assert entity_tags(["LOC", "PER"], "BILUO")[:4] == ["B-LOC", "B-PER", "I-LOC", "I-PER"]


@pytest.mark.parametrize("scheme", ["none", "auto", "BIOES"])
def test_ents_need_a_scheme(scheme):
    with pytest.raises(ValueError, match=r"\[E039\]"):
        make_nlp(factory="crf_ner", scheme=scheme)


def test_tags_to_spans_bio():
    doc = Doc(spacy.blank("en").vocab, words=["a", "b", "c", "d", "e"])
    spans = tags_to_spans(doc, ["B-X", "I-X", "B-X", "O", "B-Y"], "BIO")
    assert [(s.start, s.end, s.label_) for s in spans] == [(0, 2, "X"), (2, 3, "X"), (4, 5, "Y")]


def test_predictions_are_valid_biluo_on_unseen_text():
    nlp = make_nlp(factory="crf_ner", model={**SMALL_MODEL, "chunk_size": 3})
    train(nlp, ner_examples(nlp), steps=20)
    tagger = nlp.get_pipe("crf_ner")
    for text in ["City York New Anna Smith lives", "in in in", "Berlin Berlin Berlin Berlin"]:
        ids = tagger.predict([nlp.make_doc(text)]).ids[0]
        assert valid_reference([tagger.tags[i] for i in ids], "BILUO")


def test_preset_blocked_and_missing_tokens_as_with_spacys_ner():
    """Preset entities stay; blocked tokens stay blocked; a preset "O" may
    become an entity; every other token gets "O" outside the entities, so a
    doc without predicted entities has its IOB annotation (spaCy's ner)."""
    nlp = make_nlp(factory="crf_ner")
    train(nlp, ner_examples(nlp), steps=80)
    ner = nlp.get_pipe("crf_ner")
    doc = nlp.make_doc("Anna lives in New York City")
    doc.set_ents([], blocked=[doc.char_span(14, 27)], default="unmodified")
    doc = ner(doc)
    assert (14, 27, "LOC") not in ents_of(doc)
    assert [t.ent_iob_ for t in doc][3:] == ["B", "B", "B"] and not any(t.ent_type for t in doc[3:])
    assert all(t.ent_iob_ in ("B", "I", "O") for t in doc)
    doc = nlp.make_doc("Anna lives in New York City")
    doc.ents = [doc.char_span(0, 4, label="CUSTOM")]  # the others preset "O"
    assert ents_of(ner(doc)) == [(0, 4, "CUSTOM"), (14, 27, "LOC")]
    doc = ner(nlp.make_doc("lives in"))
    assert [t.ent_iob_ for t in doc] == ["O", "O"] and doc.has_annotation("ENT_IOB")


def test_labels_are_entity_types_as_spacys_ner_lists_them():
    nlp = make_nlp(factory="crf_ner")
    train(nlp, ner_examples(nlp), steps=2)
    ner = nlp.get_pipe("crf_ner")
    assert ner.labels == ner.label_data == ("LOC", "PER")
    assert "U-PER" in ner.tags and "O" in ner.tags
    # spacy init labels' output initializes a fresh component, as 1.0's tag lists still do
    for given in (ner.label_data, ner.tags):
        fresh = make_nlp(factory="crf_ner")
        fresh.get_pipe("crf_ner").initialize(lambda fresh=fresh: ner_examples(fresh), labels=list(given))
        assert fresh.get_pipe("crf_ner").labels == ("LOC", "PER")
        assert set(fresh.get_pipe("crf_ner").tags) == set(ner.tags)


@pytest.mark.parametrize("tag", ["B-PER", "U-LOC", "O"])
def test_add_label_refuses_a_tag(tag):
    ner = make_nlp(factory="crf_ner").get_pipe("crf_ner")
    with pytest.raises(ValueError, match=r"\[E038\]"):
        ner.add_label(tag)
    assert ner.tags == ()


def test_any_entity_type_name_is_accepted_and_learned():
    nlp = make_nlp(factory="crf_ner")
    ner = nlp.get_pipe("crf_ner")
    assert ner.add_label("LARGE-ANIMAL") == 1
    assert "B-LARGE-ANIMAL" in ner.tags and ner.labels == ("LARGE-ANIMAL",)
    data = [("I saw an elephant", [(9, 17, "LARGE-ANIMAL")]), ("A whale swam", [(2, 7, "LARGE-ANIMAL")])]
    train(nlp, ner_examples(nlp, data), steps=60)
    assert [(e.text, e.label_) for e in nlp("I saw an elephant").ents] == [("elephant", "LARGE-ANIMAL")]


def test_initialized_without_entity_types_it_writes_none_as_spacys_ner():
    nlp = make_nlp(factory="crf_ner")
    examples = [Example.from_dict(nlp.make_doc("I like ham"), {})]
    with pytest.warns(UserWarning, match="W004"):
        nlp.initialize(lambda: examples)
    ner = nlp.get_pipe("crf_ner")
    assert ner.labels == () and ner.tags == ("O",)
    doc = nlp("Anna lives in Berlin")
    assert doc.ents == () and [t.ent_iob_ for t in doc] == ["O"] * 4
    nlp.update(examples, sgd=None)  # and it trains on such docs
