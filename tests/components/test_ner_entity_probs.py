"""Entity probabilities of crf_ner: each written entity's exact posterior in
span._.crf_prob, candidate spans in a scored SpanGroup, and a precision
threshold for doc.ents, all from the decoding model pass."""

import numpy
import pytest
import spacy
from thinc.api import ConfigValidationError

from spacy_crf.targets import span_patterns

from ..helpers import make_nlp, train
from .test_ner import NER_DATA, ner_examples

TEXTS = [text for text, _ in NER_DATA] + ["Anna likes Berlin and New York", "", "Smith"]


@pytest.fixture(scope="module")
def trained():
    """A briefly trained recogniser: confident about some spans, not all."""
    nlp = make_nlp(factory="crf_ner", store_entity_probs=True, candidates_key="candidates", candidates_threshold=0.05)
    train(nlp, ner_examples(nlp), steps=12)
    return nlp


def reference_probs(nlp, doc, spans):
    """The spans' posteriors straight from the model's CRFBatch."""
    tagger = nlp.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, tagger.cfg["scheme"])
    asked = [[(start, end, types.index(label)) for start, end, label in spans]]
    return tagger.model.predict([doc]).span_probabilities(patterns, asked)[0].given


def test_every_entity_gets_its_exact_posterior(trained):
    for doc in trained.pipe(TEXTS):
        spans = [(ent.start, ent.end, ent.label_) for ent in doc.ents]
        probs = [ent._.crf_prob for ent in doc.ents]
        assert all(0.0 < p <= 1.0 for p in probs)
        if spans:
            numpy.testing.assert_allclose(probs, reference_probs(trained, trained.make_doc(doc.text), spans), rtol=1e-6)


def test_single_token_entity_probability_is_its_marginal(trained):
    tagger = trained.get_pipe("crf_ner")
    doc = trained("I like Berlin")
    (berlin,) = [ent for ent in doc.ents if ent.text == "Berlin"]
    marginals = tagger.marginals([trained.make_doc("I like Berlin")])[0]
    assert berlin._.crf_prob == pytest.approx(float(marginals[berlin.start, tagger.tags.index("U-LOC")]), rel=1e-5)


def test_candidates_are_scored_spans_above_the_threshold(trained):
    for doc in trained.pipe(TEXTS):
        group = doc.spans["candidates"]
        scores = group.attrs["scores"]
        assert len(scores) == len(group) and all(s >= 0.05 for s in scores)
        for ent in doc.ents:
            if ent._.crf_prob >= 0.05:
                assert (ent.start, ent.end, ent.label_) in {(s.start, s.end, s.label_) for s in group}
        if len(group):
            expected = reference_probs(trained, trained.make_doc(doc.text), [(s.start, s.end, s.label_) for s in group])
            numpy.testing.assert_allclose(scores, expected, rtol=1e-5)


def test_threshold_keeps_only_likely_entities(trained, tmp_path):
    text = "Anna likes Berlin and New York"
    probs = sorted(ent._.crf_prob for ent in trained(text).ents)
    assert len(probs) >= 2 and probs[0] < probs[-1]
    least = (probs[0] + probs[-1]) / 2
    tagger = trained.get_pipe("crf_ner")
    tagger.cfg["threshold"] = least
    try:
        kept = trained(text).ents
        assert kept and all(ent._.crf_prob >= least for ent in kept)
        assert len(kept) == sum(p >= least for p in probs)
    finally:
        tagger.cfg["threshold"] = 0.0


def test_roundtrip_and_pipe_equal_call(trained, tmp_path):
    trained.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    # batched (pipe) and one by one (call) differ by float32 rounding only
    for a, b in zip(trained.pipe(TEXTS, batch_size=2), [loaded(text) for text in TEXTS]):
        assert [(e.start, e.end, e.label_) for e in a.ents] == [(e.start, e.end, e.label_) for e in b.ents]
        numpy.testing.assert_allclose([e._.crf_prob for e in a.ents], [e._.crf_prob for e in b.ents], rtol=1e-5)
        assert [(s.start, s.end, s.label_) for s in a.spans["candidates"]] == [
            (s.start, s.end, s.label_) for s in b.spans["candidates"]
        ]
        numpy.testing.assert_allclose(
            a.spans["candidates"].attrs["scores"], b.spans["candidates"].attrs["scores"], rtol=1e-5
        )
    for text in TEXTS:  # saved and loaded: bit for bit
        assert [e._.crf_prob for e in trained(text).ents] == [e._.crf_prob for e in loaded(text).ents]


def test_long_docs_window_by_window(trained):
    tagger = trained.get_pipe("crf_ner")
    text = " ".join(TEXTS[:3])
    whole = trained(text)
    tagger.cfg["window"] = 7
    try:
        windowed = trained(text)
    finally:
        tagger.cfg["window"] = 8192
    for ent in windowed.ents:
        assert ent.end - 1 < (ent.start // 7 + 1) * 7  # no entity crosses a window's edge
        assert 0.0 < ent._.crf_prob <= 1.0
    assert len(whole.ents) > 0


def test_settings_are_crf_ners_and_probabilities():
    """crf_tagger still takes 0.x's entity settings, and refuses them for its
    own targets (E020); crf_morphologizer has none; crf_ner's threshold is a
    probability (E039)."""
    with pytest.raises(ValueError, match=r"\[E020\].*crf_ner"):
        make_nlp(target="tag", store_entity_probs=True)
    with pytest.raises(ValueError, match=r"\[E039\].*threshold = 1.5"):
        make_nlp(factory="crf_ner", threshold=1.5)
    with pytest.raises(ConfigValidationError, match="store_entity_probs"):  # not a setting of the others
        make_nlp(factory="crf_morphologizer", store_entity_probs=True)


def test_dropped_entities_get_the_confidence_of_outside(trained):
    tagger = trained.get_pipe("crf_ner")
    text = "Anna likes Berlin and New York"
    probs = sorted(ent._.crf_prob for ent in trained(text).ents)
    tagger.cfg.update(threshold=(probs[0] + probs[-1]) / 2, store_confidence=True)
    try:
        doc = trained(text)
    finally:
        tagger.cfg.update(threshold=0.0, store_confidence=False)
    marginals = tagger.marginals([trained.make_doc(text)])[0]
    outside = tagger.tags.index("O")
    for token in doc:
        if token.ent_iob_ == "O":  # kept outside, or an entity dropped by the threshold
            assert token._.crf_confidence == pytest.approx(float(marginals[token.i, outside]), rel=1e-5)


def test_candidates_threshold_must_be_positive():
    with pytest.raises(ValueError, match=r"\[E039\]"):
        make_nlp(factory="crf_ner", candidates_key="c", candidates_threshold=0.0)


def test_settings_given_at_load_time_are_used(trained, tmp_path):
    """spacy.load(path, config=...) overrides of the run settings take effect
    (the saved cfg does not silently win over them); what the component
    learned (labels, temperature) still comes from the saved pipeline."""
    tagger = trained.get_pipe("crf_ner")
    tagger.temperature = 1.5
    try:
        trained.to_disk(tmp_path)
    finally:
        tagger.temperature = 1.0
    text = "Anna likes Berlin and New York"
    plain_nlp = spacy.load(tmp_path)
    plain = plain_nlp.get_pipe("crf_ner")
    assert plain.cfg["store_entity_probs"] is True and plain.cfg["candidates_key"] == "candidates"
    assert plain.cfg["threshold"] == 0.0 and plain.temperature == 1.5
    probs = sorted(ent._.crf_prob for ent in plain_nlp(text).ents)
    assert len(probs) >= 2 and probs[0] < probs[-1]
    least = (probs[0] + probs[-1]) / 2
    overrides = {"store_entity_probs": False, "candidates_key": None, "threshold": least, "window": 64}
    loaded = spacy.load(tmp_path, config={"components": {"crf_ner": overrides}})
    proc = loaded.get_pipe("crf_ner")
    for key, value in overrides.items():
        # a float passes through the config's text: spaCy < 3.8.16 keeps 10 digits
        assert proc.cfg[key] == (pytest.approx(value, rel=1e-9) if isinstance(value, float) else value), key
    assert proc.tags == tagger.tags and proc.temperature == 1.5
    assert "candidates" not in loaded(text).spans and "candidates" in plain_nlp(text).spans
    kept = {(e.start, e.end, e.label_) for e in loaded(text).ents}
    assert kept == {(e.start, e.end, e.label_) for e in plain_nlp(text).ents if e._.crf_prob >= least}
    assert 0 < len(kept) < len(probs)
