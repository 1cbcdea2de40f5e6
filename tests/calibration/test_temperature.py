"""Temperature calibration: the temperature of the components' probabilities
(every probability changes, no decoded label does), its fit by
`python -m spacy_crf calibrate`, the calibration metrics (spacy_crf.calibration)
and the scorer that reports them."""

import json
import math
import sys

import numpy
import pytest
import spacy
import srsly
import torch
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_crf.calibrate import GoldScores
from spacy_crf.calibration import (
    Outcomes,
    brier_score,
    entity_outcomes,
    expected_calibration_error,
    reliability_bins,
    token_outcomes,
)
from spacy_crf.calibration.temperature import fit_temperature, golden_section
from spacy_crf.cli import main
from spacy_crf.ml import CRFBatch, torch_network
from spacy_crf.nn import CRFScores, factored_transitions, marginals
from spacy_crf.scoring import ner_score, tagger_score, token_scores
from spacy_crf.scoring.legacy import crf_tagger_score, crf_tagger_score_v2
from spacy_crf.targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget, span_patterns

from ..components.test_ner import NER_DATA, ner_examples
from ..helpers import (
    MORPH_SENTENCES,
    SENTENCES,
    all_paths,
    brute_score,
    make_examples,
    make_nlp,
    random_batch,
    train,
    with_checksum,
)
from ..nn.test_spans import matches, scheme_scores

TEXTS = ["I like green eggs", "Eat blue ham", "", "ham", "I like blue ham and green eggs , I eat ham"]
NER_TEXTS = [text for text, _ in NER_DATA] + ["Anna likes Berlin and New York", "", "Smith"]
# held-out sentences: the briefly trained recogniser gets some of them wrong
NER_DEV = NER_DATA + [
    ("Smith lives in Berlin", [(0, 5, "PER"), (15, 21, "LOC")]),
    ("Anna likes New York", [(0, 4, "PER"), (11, 19, "LOC")]),
    ("I like Anna", [(7, 11, "PER")]),
    ("Berlin loves Smith", [(0, 6, "LOC"), (13, 18, "PER")]),
]
TAU = 2.5


@pytest.fixture(scope="module")
def tagger_nlp():
    nlp = make_nlp(store_confidence=True)
    train(nlp, make_examples(nlp), steps=5)  # briefly: the model is still unsure
    return nlp


@pytest.fixture(scope="module")
def ner_nlp():
    nlp = make_nlp(factory="crf_ner", store_entity_probs=True, candidates_key="candidates", candidates_threshold=0.05)
    train(nlp, ner_examples(nlp), steps=12)
    return nlp


class at_temperature:
    """Set a component's temperature inside a `with` block."""

    def __init__(self, tagger, temperature):
        self.tagger, self.temperature = tagger, temperature

    def __enter__(self):
        self.before = self.tagger.temperature
        self.tagger.temperature = self.temperature

    def __exit__(self, *exc):
        self.tagger.temperature = self.before


# The temperature in the component


def test_temperature_one_changes_nothing(tagger_nlp):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    assert tagger.temperature == 1.0 and tagger.cfg["temperature"] == 1.0
    docs = [tagger_nlp.make_doc(text) for text in TEXTS]
    batch = tagger.model.predict(docs)  # the batch the component makes of these docs
    assert batch.temperature == 1.0 and batch.tempered is batch.scores
    own = batch.marginals()  # the model's own probabilities, straight from its scores
    with at_temperature(tagger, 1):
        marginals_one = tagger.marginals(docs)
        nbest_one = tagger.nbest(docs, k=3)
        uncertainty_one = tagger.uncertainty(docs)
    for a, b in zip(own, marginals_one):
        assert numpy.array_equal(a, b)
    with at_temperature(tagger, 1.0):
        assert nbest_one == tagger.nbest(docs, k=3)
        for (p1, e1), (p2, e2) in zip(uncertainty_one, tagger.uncertainty(docs)):
            assert p1 == p2 and numpy.array_equal(e1, e2)


@pytest.mark.parametrize("tau", [0.4, TAU])
def test_temperature_changes_probabilities_never_labels(tagger_nlp, tau):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    docs = [tagger_nlp.make_doc(text) for text in TEXTS]
    plain = tagger.predict(docs)
    plain_marginals = tagger.marginals(docs)
    with at_temperature(tagger, tau):
        hot = tagger.predict(docs)
        hot_marginals = tagger.marginals(docs)
        annotated = list(tagger_nlp.pipe(TEXTS))
    for a, b in zip(plain.ids, hot.ids):
        assert numpy.array_equal(a, b)
    assert [[t.tag_ for t in doc] for doc in annotated] == [[t.tag_ for t in tagger_nlp(text)] for text in TEXTS]
    changed = False
    for doc, ids, before, after, confidences in zip(docs, hot.ids, plain_marginals, hot_marginals, hot.confidences):
        assert after.shape == (len(doc), len(tagger.tags))
        numpy.testing.assert_allclose(after.sum(1), 1.0, rtol=1e-5)
        changed |= len(doc) > 0 and not numpy.allclose(before, after, atol=1e-4)
        # the stored confidence is the tempered marginal of the Viterbi label
        numpy.testing.assert_allclose(confidences, after[numpy.arange(len(doc)), ids], rtol=1e-5)
    assert changed
    # tau > 1 flattens, tau < 1 sharpens: the mean entropy moves accordingly
    entropy = [float(-(m * numpy.log(m.clip(1e-30))).sum(1).mean()) for m in (plain_marginals[0], hot_marginals[0])]
    assert (entropy[1] > entropy[0]) == (tau > 1)
    for doc, token_probs in zip(annotated, hot.confidences):
        assert [t._.crf_confidence for t in doc] == pytest.approx(token_probs.tolist(), rel=1e-5)


def test_tempered_marginals_are_those_of_the_divided_scores(tagger_nlp):
    """One scalar over every potential: emissions, transitions, start, end."""
    tagger = tagger_nlp.get_pipe("crf_tagger")
    batch = tagger.model.predict([tagger_nlp.make_doc(text) for text in TEXTS[:2]])
    emissions, mask, transitions, start, end, classes = batch.scores
    divided = CRFScores(emissions / TAU, mask, transitions / TAU, start / TAU, end / TAU, classes)
    expected = batch.split(marginals(divided).float().cpu().numpy())
    for a, b in zip(batch.with_temperature(TAU).marginals(), expected):
        numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("window", [0, 4])
def test_nbest_and_uncertainty_under_temperature(tagger_nlp, window):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    docs = [tagger_nlp.make_doc(text) for text in TEXTS]
    plain = tagger.nbest(docs, k=3)
    tagger.cfg["window"] = window
    try:
        with at_temperature(tagger, TAU):
            hot = tagger.nbest(docs, k=3)
            uncertainty = tagger.uncertainty(docs)
            hot_marginals = tagger.marginals(docs)
    finally:
        tagger.cfg["window"] = 8192
    for doc, a, b, (prob, entropy), probs in zip(docs, plain, hot, uncertainty, hot_marginals):
        assert prob == pytest.approx(math.exp(b[0][1]), rel=1e-4)
        expected = -(probs * numpy.log(numpy.clip(probs, 1e-300, None))).sum(-1)
        numpy.testing.assert_allclose(entropy, expected, rtol=1e-4, atol=1e-6)
        if window == 0:  # the same paths in the same order, other probabilities
            assert [tags for tags, _ in a] == [tags for tags, _ in b]
            if len(doc):
                assert b[0][1] < a[0][1] < 0  # tau > 1: the best path is less probable


def test_nbest_log_probs_match_brute_force_at_a_temperature():
    scores = random_batch(3, [4, 2], 3)
    batch = CRFBatch.from_docs(scores, [4, 2], chunk_size=0).with_temperature(TAU)
    for row, (length, ranked) in enumerate(zip([4, 2], batch.nbest(k=5))):
        values = {path: brute_score(scores, row, path) / TAU for path in all_paths(length, 3)}
        log_z = float(torch.logsumexp(torch.tensor(list(values.values()), dtype=torch.float64), 0))
        best = sorted(values, key=lambda p: -values[p])[:5]
        assert [path for path, _ in ranked] == best
        for path, log_prob in ranked:
            assert log_prob == pytest.approx(values[path] - log_z, abs=1e-9)


@pytest.mark.parametrize("scheme", ["BILUO", "BIO"])
@pytest.mark.parametrize("tau", [0.5, TAU])
def test_span_posteriors_match_brute_force_at_a_temperature(scheme, tau):
    """P_tau(span) summed over every path, exp(Score / tau) / Z_tau, with the
    scheme's constraints: forbidden paths keep probability exactly 0."""
    lengths = [4, 1]
    labels, scores, patterns = scheme_scores(scheme, ["X"], lengths, constrained=True, seed=5)
    batch = CRFBatch.from_docs(scores, lengths, chunk_size=0).with_temperature(tau)
    asked = [[(i, j + 1, 0) for i in range(n) for j in range(i, n)] for n in lengths]
    result = batch.span_probabilities(patterns.tolist(), asked, threshold=0.01)
    for row, n in enumerate(lengths):
        paths = all_paths(n, len(labels))
        values = torch.tensor([brute_score(scores, row, p) / tau for p in paths], dtype=torch.float64)
        probs = torch.exp(values - torch.logsumexp(values, 0)).tolist()
        expected = [
            sum(p for path, p in zip(paths, probs) if matches(path, start, end - 1, patterns[0].tolist()))
            for start, end, _ in asked[row]
        ]
        numpy.testing.assert_allclose(result[row].given, expected, rtol=1e-9, atol=1e-12)
        found = {(s, e): p for s, e, _, p in result[row].found}
        assert found == pytest.approx({(s, e): p for (s, e, _), p in zip(asked[row], expected) if p >= 0.01}, rel=1e-9)
    # a forbidden path stays impossible at any temperature: tempered
    # transitions keep log 0 where the scheme forbids them
    tempered = batch.tempered
    assert torch.equal(tempered.transitions <= -1e8, scores.transitions <= -1e8)


def test_temperature_keeps_factored_transitions_factored():
    gen = torch.Generator().manual_seed(0)
    classes = torch.tensor([0, 1, 0, 2, 1])
    transitions = factored_transitions(
        torch.randn(3, 3, generator=gen, dtype=torch.float64),
        torch.randn(5, generator=gen, dtype=torch.float64),
        torch.randn(5, generator=gen, dtype=torch.float64),
        classes,
    )
    dense = random_batch(1, [4, 3], 5)._replace(transitions=transitions)
    factored = dense._replace(classes=classes)
    batch = CRFBatch.from_docs(factored, [4, 3], chunk_size=0).with_temperature(TAU)
    assert batch.tempered.classes is classes
    reference = CRFBatch.from_docs(dense, [4, 3], chunk_size=0).with_temperature(TAU)
    for a, b in zip(batch.marginals(), reference.marginals()):
        numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_entity_probabilities_under_temperature(ner_nlp):
    tagger = ner_nlp.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, tagger.cfg["scheme"])
    plain = list(ner_nlp.pipe(NER_TEXTS))
    with at_temperature(tagger, TAU):
        hot = list(ner_nlp.pipe(NER_TEXTS))
    changed = False
    for text, a, b in zip(NER_TEXTS, plain, hot):
        assert [(e.start, e.end, e.label_) for e in a.ents] == [(e.start, e.end, e.label_) for e in b.ents]
        if not b.ents:
            continue
        asked = [[(e.start, e.end, types.index(e.label_)) for e in b.ents]]
        batch = tagger.model.predict([ner_nlp.make_doc(text)]).with_temperature(TAU)
        expected = batch.span_probabilities(patterns, asked)[0].given
        numpy.testing.assert_allclose([e._.crf_prob for e in b.ents], expected, rtol=1e-5)
        changed |= not numpy.allclose([e._.crf_prob for e in a.ents], expected, atol=1e-4)
        group = b.spans["candidates"]
        if len(group):
            asked = [[(s.start, s.end, types.index(s.label_)) for s in group]]
            numpy.testing.assert_allclose(
                group.attrs["scores"], batch.span_probabilities(patterns, asked)[0].given, rtol=1e-5
            )
    assert changed


def test_threshold_reads_tempered_posteriors(ner_nlp):
    """A threshold between an entity's posterior at tau = 1 and at tau keeps
    it at one temperature and drops it at the other."""
    tagger = ner_nlp.get_pipe("crf_ner")
    text = "Anna likes Berlin and New York"
    plain = {(e.start, e.end, e.label_): e._.crf_prob for e in ner_nlp(text).ents}
    tau = 0.3  # sharper: a likely entity gets likelier
    with at_temperature(tagger, tau):
        sharp = {(e.start, e.end, e.label_): e._.crf_prob for e in ner_nlp(text).ents}
    assert plain.keys() == sharp.keys() and plain
    key = max(plain, key=lambda k: sharp[k] - plain[k])
    assert sharp[key] > plain[key]
    tagger.cfg["threshold"] = (plain[key] + sharp[key]) / 2
    try:
        assert key not in {(e.start, e.end, e.label_) for e in ner_nlp(text).ents}
        with at_temperature(tagger, tau):
            assert key in {(e.start, e.end, e.label_) for e in ner_nlp(text).ents}
    finally:
        tagger.cfg["threshold"] = 0.0


@pytest.mark.parametrize(
    "value", [0, 0.0, -1.0, float("nan"), float("inf"), "2", None, True, 1e-3, 1e-20, 1e-37, 101.0]
)
def test_invalid_temperature_raises(tagger_nlp, value):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[E024\]"):
        tagger.temperature = value
    assert tagger.temperature == 1.0


def test_temperature_roundtrip(tagger_nlp, tmp_path):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    docs = [tagger_nlp.make_doc(text) for text in TEXTS]
    with at_temperature(tagger, TAU):
        expected = tagger.marginals(docs)
        tagger_nlp.to_disk(tmp_path / "nlp")
        data = tagger_nlp.to_bytes()
    assert srsly.read_json(tmp_path / "nlp" / "crf_tagger" / "cfg")["temperature"] == TAU
    for loaded in (spacy.load(tmp_path / "nlp"), make_nlp(store_confidence=True).from_bytes(data)):
        other = loaded.get_pipe("crf_tagger")
        assert other.temperature == TAU
        for a, b in zip(expected, other.marginals(docs)):
            assert numpy.array_equal(a, b)


def test_pipelines_saved_without_a_temperature_read_one(tagger_nlp, tmp_path):
    tagger_nlp.to_disk(tmp_path)
    cfg = srsly.read_json(tmp_path / "crf_tagger" / "cfg")
    for key in ("temperature", "checksum", "batch_words", "by_sentence", "trained"):  # as spacy-crf 0.1.0 saved it
        cfg.pop(key, None)
    srsly.write_json(tmp_path / "crf_tagger" / "cfg", cfg)
    loaded = spacy.load(tmp_path)
    assert loaded.get_pipe("crf_tagger").temperature == 1.0
    # loading into a component that had another temperature resets it too
    other = make_nlp(store_confidence=True)
    train(other, make_examples(other), steps=1)
    other.get_pipe("crf_tagger").temperature = TAU
    other.get_pipe("crf_tagger").from_disk(tmp_path / "crf_tagger", exclude=["vocab"])
    assert other.get_pipe("crf_tagger").temperature == 1.0


def test_an_invalid_saved_temperature_is_refused(tagger_nlp, tmp_path):
    tagger_nlp.to_disk(tmp_path)
    cfg = srsly.read_json(tmp_path / "crf_tagger" / "cfg")
    srsly.write_json(tmp_path / "crf_tagger" / "cfg", {**cfg, "temperature": -2.0})
    tagger = tagger_nlp.get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[E007\].*checksum"):  # an edited cfg
        tagger.from_disk(tmp_path / "crf_tagger")
    model_bytes = (tmp_path / "crf_tagger" / "model").read_bytes()
    for value in (-2.0, 1e-3, 1e3):  # edited on purpose, the checksum recomputed
        srsly.write_json(tmp_path / "crf_tagger" / "cfg", with_checksum({**cfg, "temperature": value}, model_bytes))
        with pytest.raises(ValueError, match=r"\[E035\].*\[E024\]"):
            tagger.from_disk(tmp_path / "crf_tagger")
    assert tagger.temperature == 1.0


# Calibration metrics


def test_ece_and_brier_by_hand():
    probs, right = [0.9, 0.8, 0.3, 0.55], [True, False, False, True]
    # 2 bins: (0, 0.5] holds 0.3 (wrong): |0 - 0.3| * 1/4; (0.5, 1] holds
    # 0.9, 0.8, 0.55 (2 right): |2/3 - 0.75| * 3/4
    assert expected_calibration_error(probs, right, n_bins=2) == pytest.approx(0.3 / 4 + (0.75 - 2 / 3) * 3 / 4)
    assert brier_score(probs, right) == pytest.approx((0.01 + 0.64 + 0.09 + 0.2025) / 4)
    # 15 bins: 0.95 twice (one right) in the last, 0.05 (wrong) in the first
    assert expected_calibration_error([0.95, 0.95, 0.05], [1, 0, 0]) == pytest.approx(0.45 * 2 / 3 + 0.05 / 3)
    # calibrated: 3 of 4 right at 0.75
    assert expected_calibration_error([0.75] * 4, [1, 1, 1, 0]) == pytest.approx(0.0)
    assert brier_score([1.0, 0.0], [True, False]) == 0.0
    assert math.isnan(expected_calibration_error([], [])) and math.isnan(brier_score([], []))


def test_reliability_bins_by_hand():
    bins = reliability_bins([0.0, 0.1, 0.5, 0.51, 1.0, 1.0000001], [0, 1, 1, 0, 1, 1], n_bins=2)
    assert bins.edges.tolist() == [0.0, 0.5, 1.0]
    assert bins.counts.tolist() == [3, 3]  # 0 and 0.5 (right-closed) in the first bin
    assert bins.confidence.tolist() == pytest.approx([0.2, (0.51 + 2.0) / 3])
    assert bins.accuracy.tolist() == pytest.approx([2 / 3, 2 / 3])
    empty = reliability_bins([0.9], [1], n_bins=3)
    assert empty.counts.tolist() == [0, 0, 1] and numpy.isnan(empty.accuracy[0])
    assert empty.to_dict()["accuracy"] == [None, None, 1.0]
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        reliability_bins([1.1], [1])
    with pytest.raises(ValueError, match="differ in length"):
        brier_score([0.5, 0.5], [1])


def test_token_outcomes_skip_unknown_gold():
    outcomes = token_outcomes([0.9, None, 0.6, 0.7, 0.8], ["N", "V", "J", "N", "V"], ["N", "V", "N", "", "!V"])
    assert outcomes.probs.tolist() == [0.9, 0.6] and outcomes.right.tolist() == [True, False]
    assert Outcomes.join([outcomes, outcomes]).metrics(2)["accuracy"] == 0.5


def test_entity_outcomes_judge_as_spacy_ner_scores():
    nlp = spacy.blank("en")
    words = ["Anna", "lives", "in", "New", "York", "and", "Rome"]
    gold = Doc(nlp.vocab, words=words, ents=["B-PER", "O", "O", "B-LOC", "I-LOC", "O", ""])
    eg = Example(Doc(nlp.vocab, words=words), gold)
    spans = [(0, 1, "PER", 0.9), (3, 5, "PER", 0.6), (3, 4, "LOC", 0.3), (6, 7, "LOC", 0.8), (1, 2, "PER", 0.2)]
    outcomes = entity_outcomes(eg, spans)
    # (6, 7) covers a token without gold entity annotation: not judged
    assert outcomes.probs.tolist() == [0.9, 0.6, 0.3, 0.2]
    assert outcomes.right.tolist() == [True, False, False, False]
    unannotated = Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words))
    assert len(entity_outcomes(unannotated, spans)) == 0


TARGETS = [
    *TOKEN_TARGETS.values(),
    *MORPH_TARGETS.values(),
    EntityTarget("BILUO"),
    EntityTarget("BIO"),
    EntityTarget("IOBES"),
    EntityTarget("IOB2"),
]


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"ents-{t.scheme}" if hasattr(t, "scheme") else t.name)
def test_predicted_values_read_back_what_gold_values_read(target):
    """A doc's own annotation, read as a prediction and as gold, agrees."""
    vocab = spacy.blank("en").vocab
    for (words, pos, morphs), (_, tags) in zip(MORPH_SENTENCES, SENTENCES):
        ents = ["B-PER"] + ["O"] * (len(words) - 1)
        doc = Doc(vocab, words=words, pos=pos, morphs=morphs, tags=tags[: len(words)], ents=ents)
        predicted = target.predicted_values(doc)
        assert predicted == target.gold_values(Example(Doc(vocab, words=words), doc))
        assert all(predicted)


# The scorer


def test_tagger_scorer_adds_calibration_where_docs_carry_probabilities(tagger_nlp):
    examples = make_examples(tagger_nlp)
    predicted = [Example(tagger_nlp(eg.reference.text), eg.reference) for eg in examples]
    plain = token_scores(predicted, target="tag")
    assert set(plain) == {"tag_acc"}
    scores = tagger_score(predicted, target="tag")
    assert set(scores) == {"tag_acc", "confidence_ece", "confidence_brier"} and scores["tag_acc"] == plain["tag_acc"]
    probs = [t._.crf_confidence for eg in predicted for t in eg.predicted]
    right = [t.tag_ == g.tag_ for eg in predicted for t, g in zip(eg.predicted, eg.reference)]
    assert scores["confidence_ece"] == pytest.approx(expected_calibration_error(probs, right))
    assert scores["confidence_brier"] == pytest.approx(brier_score(probs, right))
    # the factory's scorer is tagger_score: the component (store_confidence) reports them
    evaluated = tagger_nlp.evaluate(examples)
    assert evaluated["tag_acc"] == scores["tag_acc"]
    assert evaluated["confidence_ece"] == pytest.approx(scores["confidence_ece"])
    # docs without probabilities: the token scores alone
    bare = [Example(tagger_nlp.make_doc(eg.reference.text), eg.reference) for eg in examples]
    assert tagger_score(bare, target="tag") == token_scores(bare, target="tag")


def test_legacy_scorer_v1_is_unchanged_and_v2_adds_calibration(tagger_nlp):
    """0.x's crf_tagger_scorer.v1 and .v2 (spacy_crf.scoring.legacy)."""
    examples = make_examples(tagger_nlp)
    predicted = [Example(tagger_nlp(eg.reference.text), eg.reference) for eg in examples]
    v1 = crf_tagger_score(predicted, target="tag")
    assert set(v1) == {"tag_acc"}
    v2 = crf_tagger_score_v2(predicted, target="tag", constraints="auto")
    assert v2 == tagger_score(predicted, target="tag")
    assert v2["tag_acc"] == v1["tag_acc"]
    probs = [t._.crf_confidence for eg in predicted for t in eg.predicted]
    right = [t.tag_ == g.tag_ for eg in predicted for t, g in zip(eg.predicted, eg.reference)]
    assert v2["confidence_ece"] == pytest.approx(expected_calibration_error(probs, right))
    assert v2["confidence_brier"] == pytest.approx(brier_score(probs, right))
    # docs without probabilities: v2 is v1
    bare = [Example(tagger_nlp.make_doc(eg.reference.text), eg.reference) for eg in examples]
    assert crf_tagger_score_v2(bare, target="tag") == crf_tagger_score(bare, target="tag")


@pytest.mark.parametrize("scorer", ["spacy_crf.ner_scorer.v1", "spacy_crf.crf_tagger_scorer.v2"])
def test_ner_scorer_in_a_pipeline_scores_entity_posteriors(scorer):
    """crf_ner's scorer (and 0.x's crf_tagger_scorer.v2 in its place)."""
    nlp = make_nlp(
        factory="crf_ner",
        store_entity_probs=True,
        store_confidence=True,
        scorer={"@scorers": scorer},
    )
    train(nlp, ner_examples(nlp), steps=12)
    examples = ner_examples(nlp, NER_DEV)
    scores = nlp.evaluate(examples)
    assert {"ents_f", "confidence_ece", "confidence_brier", "ents_prob_ece", "ents_prob_brier"} <= set(scores)
    predicted = [Example(doc, eg.reference) for doc, eg in zip(nlp.pipe(eg.x.text for eg in examples), examples)]
    assert set(ner_score(predicted)) == {
        "ents_p",
        "ents_r",
        "ents_f",
        "ents_per_type",
        "confidence_ece",
        "confidence_brier",
        "ents_prob_ece",
        "ents_prob_brier",
    }
    report = GoldScores(nlp, "crf_ner", ner_examples(nlp, NER_DEV)).report(1.0)
    assert scores["ents_prob_ece"] == pytest.approx(report.metrics()["ents_ece"], rel=1e-5)
    assert scores["confidence_brier"] == pytest.approx(report.metrics()["token_brier"], rel=1e-5)
    assert scores["ents_p"] == pytest.approx(report.metrics()["ents_precision"])


# Fitting the temperature


def test_golden_section_and_fit_find_the_minimum():
    best, bracket = golden_section(lambda x: (x - 0.3) ** 2, -2.0, 2.0, tolerance=1e-6)
    assert best == pytest.approx(0.3, abs=1e-5) and bracket[0] > -2.0 and bracket[1] < 2.0
    fit = fit_temperature(lambda tau: (math.log(tau) - math.log(2.5)) ** 2)
    assert fit.temperature == pytest.approx(2.5, rel=1e-3) and not fit.at_edge
    assert 1.0 in fit.nll
    flat = fit_temperature(lambda tau: 1.0)  # a tie: tau = 1 is kept
    assert flat.temperature == 1.0
    falling = fit_temperature(lambda tau: tau)  # the minimum lies below the range
    assert falling.temperature == pytest.approx(0.01, rel=1e-2) and falling.at_edge
    with pytest.raises(ValueError):
        fit_temperature(lambda tau: tau, low=2.0, high=1.0)


def tagged_docbin(path, sentences):
    vocab = spacy.blank("en").vocab
    DocBin(docs=[Doc(vocab, words=words, tags=tags) for words, tags in sentences]).to_disk(path)


# held out: words and tags the training data has, in other orders
DEV_SENTENCES = [
    (["I", "like", "blue", "ham"], ["N", "V", "J", "N"]),
    (["Eat", "green", "eggs"], ["V", "J", "N"]),
    (["ham", "like", "eggs"], ["N", "V", "N"]),
    (["blue", "eggs"], ["J", "N"]),
]


def test_calibrate_command_fits_and_saves(tagger_nlp, tmp_path, capsys):
    tagger_nlp.to_disk(tmp_path / "model")
    tagged_docbin(tmp_path / "dev.spacy", DEV_SENTENCES)
    assert (
        main(
            [
                "calibrate",
                str(tmp_path / "model"),
                str(tmp_path / "dev.spacy"),
                "--output",
                str(tmp_path / "calibrated"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])
    assert "NLL / gold token" in out and "token ECE" in out and "token Brier" in out
    tau = result["temperature"]
    assert tau != 1.0 and 0.01 <= tau <= 100
    loaded = spacy.load(tmp_path / "calibrated")
    assert loaded.get_pipe("crf_tagger").temperature == pytest.approx(tau)
    assert spacy.load(tmp_path / "model").get_pipe("crf_tagger").temperature == 1.0  # left as it was
    # the fitted temperature lowers the dev NLL; the labels stay the same
    examples = [
        Example(tagger_nlp.make_doc(" ".join(w)), Doc(tagger_nlp.vocab, words=w, tags=t)) for w, t in DEV_SENTENCES
    ]
    scores = GoldScores(tagger_nlp, "crf_tagger", examples)
    assert scores.nll(tau) < scores.nll(1.0)
    assert result["after"]["nll"] < result["before"]["nll"]
    assert result["before"]["nll"] == pytest.approx(scores.nll(1.0) / scores.n_gold_tokens, rel=1e-6)
    assert result["after"]["token_accuracy"] == result["before"]["token_accuracy"]
    for step in (0.97, 1.03):  # a minimum, to the search's precision
        assert scores.nll(tau) <= scores.nll(tau * step) + 1e-9
    text = "I like blue ham"
    assert [t.tag_ for t in loaded(text)] == [t.tag_ for t in tagger_nlp(text)]


@pytest.mark.parametrize("window", [0, 2])
def test_gold_scores_read_what_the_component_predicts(tagger_nlp, window):
    """GoldScores scores the docs once, as the component does (windows
    included): at any temperature its confidences are the component's."""
    tagger = tagger_nlp.get_pipe("crf_tagger")
    examples = [
        Example(tagger_nlp.make_doc(" ".join(w)), Doc(tagger_nlp.vocab, words=w, tags=t)) for w, t in DEV_SENTENCES
    ]
    tagger.cfg["window"] = window
    try:
        scores = GoldScores(tagger_nlp, "crf_tagger", examples)
        with at_temperature(tagger, TAU):
            expected = tagger.predict([eg.predicted for eg in examples])
    finally:
        tagger.cfg["window"] = 8192
    assert scores.n_gold_tokens == sum(len(w) for w, _ in DEV_SENTENCES) == len(scores.report(TAU).tokens)
    numpy.testing.assert_allclose(scores.report(TAU).tokens.probs, numpy.concatenate(expected.confidences), rtol=1e-5)
    right = [tagger.tags[i] == tag for ids, (_, tags) in zip(expected.ids, DEV_SENTENCES) for i, tag in zip(ids, tags)]
    assert scores.report(TAU).tokens.right.tolist() == right
    assert scores.nll(TAU) > 0


def test_calibrate_in_place_rewrites_only_the_cfg(tagger_nlp, tmp_path, capsys):
    tagger_nlp.to_disk(tmp_path / "model")
    tagged_docbin(tmp_path / "dev.spacy", DEV_SENTENCES)
    weights = (tmp_path / "model" / "crf_tagger" / "model").read_bytes()
    assert main(["calibrate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--gold-preproc"]) == 0
    tau = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["temperature"]
    assert (tmp_path / "model" / "crf_tagger" / "model").read_bytes() == weights
    assert spacy.load(tmp_path / "model").get_pipe("crf_tagger").temperature == pytest.approx(tau)


def test_calibrate_keeps_tau_one_when_it_is_best(tmp_path, capsys):
    """A network whose weights are all 0 scores every path 0: the NLL is the
    same at every tau, and tau = 1 is kept."""
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=0)
    with torch.no_grad():
        for parameter in torch_network(nlp.get_pipe("crf_tagger").model).parameters():
            parameter.zero_()
    nlp.to_disk(tmp_path / "model")
    tagged_docbin(tmp_path / "dev.spacy", DEV_SENTENCES)
    assert main(["calibrate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--dry-run"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["temperature"] == 1.0 and result["written"] is None
    assert result["after"]["nll"] == result["before"]["nll"]


def test_calibrate_entities(ner_nlp, tmp_path, capsys):
    ner_nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in ner_examples(ner_nlp, NER_DEV)]).to_disk(tmp_path / "dev.spacy")
    assert (
        main(["calibrate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "out")])
        == 0
    )
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])
    assert "entity ECE" in out and "entity Brier" in out
    assert result["after"]["nll"] <= result["before"]["nll"]
    assert result["after"]["ents_precision"] == result["before"]["ents_precision"]
    for when in ("before", "after"):
        assert 0.0 <= result[when]["ents_ece"] <= 1.0 and 0.0 <= result[when]["ents_brier"] <= 1.0
    assert spacy.load(tmp_path / "out").get_pipe("crf_ner").temperature == pytest.approx(result["temperature"])


def test_calibrate_entities_objective_minimises_the_entities_log_loss(ner_nlp, tmp_path, capsys):
    """--objective entities: tau minimises the decoded entities' log loss (by
    hand from their posteriors), not the gold labels' NLL."""
    from spacy.training import Corpus

    from spacy_crf.calibrate import GoldScores

    ner_nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in ner_examples(ner_nlp, NER_DEV)]).to_disk(tmp_path / "dev.spacy")
    assert (
        main(
            [
                "calibrate",
                str(tmp_path / "model"),
                str(tmp_path / "dev.spacy"),
                "--output",
                str(tmp_path / "out"),
                "--objective",
                "entities",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])
    assert "entity log loss, summed (fitted)" in out
    assert result["objective"] == "entities"
    tau = result["temperature"]
    nlp = spacy.load(tmp_path / "model")
    scores = GoldScores(nlp, "crf_ner", list(Corpus(tmp_path / "dev.spacy")(nlp)))

    def by_hand(t):
        entities = scores.report(t).entities
        probs = numpy.clip(numpy.asarray(entities.probs, dtype="float64"), 1e-9, 1 - 1e-9)
        right = numpy.asarray(entities.right, dtype=bool)
        return float(-numpy.where(right, numpy.log(probs), numpy.log(1 - probs)).sum())

    assert len(scores.report(1.0).entities) > 0
    assert scores.entity_log_loss(tau) == pytest.approx(by_hand(tau))
    for other in (tau * 0.9, tau * 1.1, 1.0, 0.5, 2.0):
        assert by_hand(tau) <= by_hand(other) + 1e-6
    assert spacy.load(tmp_path / "out").get_pipe("crf_ner").temperature == pytest.approx(tau)


def test_calibrate_errors(tagger_nlp, tmp_path, capsys):
    tagged_docbin(tmp_path / "dev.spacy", DEV_SENTENCES)
    blank = spacy.blank("en")
    blank.to_disk(tmp_path / "blank")
    assert main(["calibrate", str(tmp_path / "blank"), str(tmp_path / "dev.spacy")]) == 1
    assert "[E025]" in capsys.readouterr().out
    tagger_nlp.to_disk(tmp_path / "model")
    assert main(["calibrate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--component", "x"]) == 1
    assert "[E025]" in capsys.readouterr().out
    # in place needs a pipeline folder
    from spacy_crf.calibrate import calibrate

    with pytest.raises(ValueError, match=r"\[E025\].*--output"):
        calibrate("not_a_folder", tmp_path / "dev.spacy", nlp=tagger_nlp)
    # the entities' objective needs entities; an unknown objective is refused
    with pytest.raises(ValueError, match=r"\[E025\].*needs a crf_ner"):
        calibrate(tmp_path / "model", tmp_path / "dev.spacy", write=False, objective="entities")
    with pytest.raises(ValueError, match=r"\[E025\].*objective must be one of"):
        calibrate(tmp_path / "model", tmp_path / "dev.spacy", write=False, objective="spans")
    # dev docs without gold tags
    DocBin(docs=[Doc(blank.vocab, words=["ham"])]).to_disk(tmp_path / "bare.spacy")
    with pytest.raises(ValueError, match=r"\[E025\].*no gold label"):
        calibrate(tmp_path / "model", tmp_path / "bare.spacy", write=False)


# The reliability diagram


def test_reliability_script_names_matplotlib_when_missing(tagger_nlp, tmp_path, monkeypatch, capsys):
    from benchmarks import reliability

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert reliability.main(["model", "dev.spacy", "--output", str(tmp_path / "r.png")]) == 1
    assert "pip install matplotlib" in capsys.readouterr().err


def test_reliability_script_draws_and_writes_json(ner_nlp, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from benchmarks import reliability

    ner_nlp.get_pipe("crf_ner").temperature = 0.5
    try:
        ner_nlp.to_disk(tmp_path / "model")
    finally:
        ner_nlp.get_pipe("crf_ner").temperature = 1.0
    DocBin(docs=[eg.reference for eg in ner_examples(ner_nlp, NER_DEV)]).to_disk(tmp_path / "dev.spacy")
    image, data = tmp_path / "out" / "reliability.png", tmp_path / "out" / "reliability.json"
    assert (
        reliability.main(
            [str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--output", str(image), "--json", str(data)]
        )
        == 0
    )
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads(data.read_text())
    assert set(report) >= {"tokens", "entities"}
    assert report["tokens"]["before"]["temperature"] == 1.0 and report["tokens"]["after"]["temperature"] == 0.5
    bins = report["entities"]["after"]["bins"]
    assert len(bins["counts"]) == 15 and sum(bins["counts"]) == report["entities"]["after"]["n"] > 0


def test_token_marginals_of_long_docs_with_large_scores_stay_probabilities():
    """float32 forward-backward over a long row with scores in the thousands:
    each token's marginals sum to 1 and none passes 1."""
    import torch

    from spacy_crf.ml import CRFBatch
    from spacy_crf.nn import CRFScores

    gen = torch.Generator().manual_seed(0)
    T, K = 400, 13
    scores = CRFScores(
        torch.randn(2, T, K, generator=gen) * 300,
        torch.arange(T) < torch.tensor([T, 7])[:, None],
        torch.randn(K, K, generator=gen) * 50,
        torch.zeros(K),
        torch.zeros(K),
    )
    batch = CRFBatch.from_docs(scores, [T, 7], 0)
    marginals = batch.marginals()
    for m in marginals:
        assert (m <= 1.0 + 1e-6).all() and (m >= 0.0).all()
        assert numpy.allclose(m.sum(1), 1.0, atol=1e-5)
    _, confidences = batch.decode_with_confidence()
    assert all((c <= 1.0 + 1e-6).all() for c in confidences)


@pytest.mark.parametrize("interleave", [False, True])
def test_split_corpus_halves(tmp_path, interleave, capsys):
    """benchmarks.split_corpus: every doc lands in exactly one half; the
    contiguous split keeps order, the interleaved one alternates."""
    from benchmarks.split_corpus import main as split_main

    nlp = spacy.blank("en")
    docs = [nlp.make_doc(f"doc {i}") for i in range(7)]
    DocBin(docs=docs).to_disk(tmp_path / "all.spacy")
    argv = [str(tmp_path / "all.spacy"), str(tmp_path / "a.spacy"), str(tmp_path / "b.spacy")]
    assert split_main(argv + (["--interleave"] if interleave else [])) == 0
    halves = [[d.text for d in DocBin().from_disk(tmp_path / f"{h}.spacy").get_docs(nlp.vocab)] for h in "ab"]
    if interleave:
        assert halves == [[f"doc {i}" for i in (0, 2, 4, 6)], [f"doc {i}" for i in (1, 3, 5)]]
    else:
        assert halves == [[f"doc {i}" for i in (0, 1, 2)], [f"doc {i}" for i in (3, 4, 5, 6)]]


def test_split_corpus_folds(tmp_path, capsys):
    """benchmarks.split_corpus --folds: each doc is held out in exactly one
    fold (with --block, in blocks of consecutive docs dealt round robin),
    every fold's rest is the other docs in their order, and the share of
    held-out entities seen in the rest is printed."""
    from benchmarks.split_corpus import main as split_main

    nlp = spacy.blank("en")
    docs = [nlp.make_doc(f"doc {i}") for i in range(7)]
    for i, doc in enumerate(docs):  # "doc" is an entity in docs 0 to 3, "i" in doc i
        doc.ents = (
            [doc.char_span(0, 3, label="X"), doc.char_span(4, 5, label="N")]
            if i < 4
            else [doc.char_span(4, 5, label="N")]
        )
    DocBin(docs=docs).to_disk(tmp_path / "all.spacy")
    corpus = str(tmp_path / "all.spacy")

    def texts(folder, name):
        return [d.text for d in DocBin().from_disk(tmp_path / folder / name).get_docs(nlp.vocab)]

    assert split_main([corpus, "--folds", "3", "--output-dir", str(tmp_path / "one"), "--dev", corpus]) == 0
    held_out = [texts("one", f"fold-{k}.spacy") for k in range(3)]
    assert held_out == [["doc 0", "doc 3", "doc 6"], ["doc 1", "doc 4"], ["doc 2", "doc 5"]]
    for k in range(3):
        assert texts("one", f"rest-{k}.spacy") == [d.text for d in docs if d.text not in held_out[k]]
    printed = capsys.readouterr().out
    # fold 0: "doc" twice (seen in docs 1, 2) and 0, 3, 6 (unseen): 2 of 5; the corpus against itself: all
    assert "fold 0: 3 docs held out, 4 to train on; 40.0% of its entities" in printed
    assert f"{corpus}: 100.0% of its entities' texts are entities of {corpus}" in printed
    assert split_main([corpus, "--folds", "3", "--block", "2", "--output-dir", str(tmp_path / "two")]) == 0
    held_out = [texts("two", f"fold-{k}.spacy") for k in range(3)]
    assert held_out == [["doc 0", "doc 1", "doc 6"], ["doc 2", "doc 3"], ["doc 4", "doc 5"]]
    assert texts("two", "rest-0.spacy") == ["doc 2", "doc 3", "doc 4", "doc 5"]
    # blocks of 3: folds of 3, 3 and 1 docs; of 4, the third fold would be empty
    assert split_main([corpus, "--folds", "3", "--block", "3", "--output-dir", str(tmp_path / "three")]) == 0
    assert [len(texts("three", f"fold-{k}.spacy")) for k in range(3)] == [3, 3, 1]
    wrong = {
        "leave a fold empty": [corpus, "--folds", "3", "--block", "4", "--output-dir", str(tmp_path / "x")],
        "--folds must be at least 2": [corpus, "--folds", "1", "--output-dir", str(tmp_path / "x")],
        "--folds takes --output-dir": [corpus, "--folds", "2"],
        "not FIRST, SECOND or --interleave": [
            corpus,
            "--folds",
            "2",
            "--interleave",
            "--output-dir",
            str(tmp_path / "x"),
        ],
        "give FIRST and SECOND": [corpus, str(tmp_path / "a.spacy")],
        "(halves), or --folds": [corpus, str(tmp_path / "a.spacy"), str(tmp_path / "b.spacy"), "--block", "2"],
    }
    for message, argv in wrong.items():
        with pytest.raises(SystemExit):
            split_main(argv)
        assert message in capsys.readouterr().err


def test_sampling_ece_is_the_ece_of_a_calibrated_predictor():
    """sampling_ece: zero for certain predictions, shrinking with n, near
    the ECE measured on outcomes truly drawn with the probabilities, and
    reproducible."""
    from spacy_crf.calibration import sampling_ece

    assert sampling_ece([0.0, 1.0, 1.0]) == 0.0
    assert math.isnan(sampling_ece([]))
    rng = numpy.random.default_rng(1)
    small, large = rng.uniform(0.3, 1.0, 100), rng.uniform(0.3, 1.0, 10_000)
    assert sampling_ece(small) > 2 * sampling_ece(large) > 0.0
    assert sampling_ece(small) == sampling_ece(small)
    measured = [expected_calibration_error(small, rng.random(100) < small) for _ in range(400)]
    assert sampling_ece(small, draws=400) == pytest.approx(numpy.mean(measured), rel=0.1)
