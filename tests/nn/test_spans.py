"""Exact entity span posteriors (spacy_crf/nn/spans.py) against brute-force
enumeration of every path, and their per-doc answers (CRFBatch, DocScores)."""

import itertools
import math

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc

from spacy_crf.ml import CRFBatch, DocScores
from spacy_crf.nn import (
    NEG_INF,
    CRFScores,
    all_span_log_probs,
    constrain,
    forward_backward,
    log_partition,
    marginals,
    span_log_probs,
)
from spacy_crf.targets import entity_tags, span_patterns, tags_to_spans
from spacy_crf.targets.schemes import allowed_transitions

from ..components.test_ner import ner_examples
from ..helpers import SMALL_MODEL, brute_score, make_nlp, random_batch, train

SCHEMES = ["BILUO", "IOBES", "BIO", "IOB2"]
# (entity types, row lengths): a padded batch with rows of length 0 and 1
CASES = [(["X"], [5, 0, 1, 4]), (["X", "Y"], [3, 1, 0, 2])]
VOCAB = spacy.blank("en").vocab


def scheme_scores(scheme, types, lengths, *, constrained, seed=0, dtype=torch.float64):
    labels = entity_tags(types, scheme)
    scores = random_batch(seed, lengths, len(labels), dtype=dtype)
    if constrained:
        scores = constrain(scores, *(torch.from_numpy(m) for m in allowed_transitions(labels, scheme)))
    names, patterns = span_patterns(labels, scheme)
    assert names == sorted(types)
    return labels, scores, torch.tensor(patterns)


def matches(path, i, j, pattern):
    """Whether the span i..j (inclusive) is one entity of the pattern's type
    on the path, by the definition in spans.py, written out."""
    single, first, middle, last, not_after = pattern
    if i == j:
        ok = path[i] == single
    else:
        ok = path[i] == first and path[j] == last and all(path[t] == middle for t in range(i + 1, j))
    return ok and not (not_after >= 0 and j + 1 < len(path) and path[j + 1] == not_after)


def path_probs(scores, row, length, allowed=None):
    """Every path of the row with its probability (constrained: only the
    paths the scheme allows, the others having probability 0)."""
    K = scores.emissions.shape[2]
    if length == 0:
        return [()], [1.0]
    paths = list(itertools.product(range(K), repeat=length))
    values = torch.tensor([brute_score(scores, row, p) for p in paths], dtype=torch.float64)
    probs = torch.exp(values - torch.logsumexp(values, 0)).tolist()
    if allowed is not None:
        transitions, start, end = allowed
        valid = [start[p[0]] and end[p[-1]] and all(transitions[a, b] for a, b in zip(p, p[1:])) for p in paths]
        assert sum(pr for pr, ok in zip(probs, valid) if not ok) < 1e-12
        paths = [p for p, ok in zip(paths, valid) if ok]
        probs = [pr for pr, ok in zip(probs, valid) if ok]
    return paths, probs


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("types,lengths", CASES)
def test_span_probabilities_match_brute_force(scheme, constrained, types, lengths):
    labels, scores, patterns = scheme_scores(scheme, types, lengths, constrained=constrained)
    T = scores.emissions.shape[1]
    every = all_span_log_probs(scores, patterns, T)
    assert every.shape == (len(lengths), T, T, len(types)) and every.dtype == torch.float64
    spans = [
        (row, i, j, x)
        for row, n in enumerate(lengths)
        for i in range(n)
        for j in range(i, n)
        for x in range(len(types))
    ]
    given = span_log_probs(scores, torch.tensor(spans), patterns)
    assert given.dtype == torch.float64
    allowed = allowed_transitions(labels, scheme) if constrained else None
    expected_count = numpy.zeros(len(lengths))
    for row, n in enumerate(lengths):
        paths, probs = path_probs(scores, row, n, allowed)
        doc = Doc(VOCAB, words=["w"] * n)
        for path, prob in zip(paths, probs):
            if constrained:
                # the component's own reading of a path: the same spans
                found = {(s.start, s.end - 1, s.label_) for s in tags_to_spans(doc, [labels[y] for y in path], scheme)}
                mine = {
                    (i, j, types[x])
                    for i in range(n)
                    for j in range(i, n)
                    for x in range(len(types))
                    if matches(path, i, j, patterns[x].tolist())
                }
                assert found == mine, [labels[y] for y in path]
            expected_count[row] += prob * sum(
                matches(path, i, j, patterns[x].tolist())
                for i in range(n)
                for j in range(i, n)
                for x in range(len(types))
            )
        for k, (b, i, j, x) in enumerate(spans):
            if b != row:
                continue
            brute = sum(p for path, p in zip(paths, probs) if matches(path, i, j, patterns[x].tolist()))
            assert math.exp(given[k]) == pytest.approx(brute, abs=1e-5)
            assert math.exp(every[row, i, j - i, x]) == pytest.approx(brute, abs=1e-5)
    # nowhere else: spans past a row's end (and rows of length 0) have none
    ends = torch.arange(T)[:, None] + torch.arange(T)[None, :]  # i + L - 1
    outside = ends[None] >= torch.tensor(lengths)[:, None, None]
    assert (every[outside] == NEG_INF).all()
    # sum over types and spans = the expected number of entities
    total = torch.exp(every).sum((1, 2, 3))
    assert total.tolist() == pytest.approx(expected_count.tolist(), abs=1e-5)


@pytest.mark.parametrize("constrained", [False, True])
def test_unit_span_is_the_marginal(constrained):
    _, scores, patterns = scheme_scores("BILUO", ["X", "Y"], [4, 1, 0, 3], constrained=constrained)
    every = all_span_log_probs(scores, patterns, 1)
    probs = marginals(scores)
    units = patterns[:, 0]
    mask = scores.mask
    assert torch.allclose(torch.exp(every[:, :, 0])[mask], probs[:, :, units][mask], atol=1e-10)


def test_forward_backward_gives_marginals_and_log_z():
    scores = random_batch(3, [4, 0, 1, 3], 4)
    alphas, betas, log_z = forward_backward(scores)
    assert torch.allclose(log_z, log_partition(scores))
    marg = torch.exp(alphas + betas - log_z[:, None, None]) * scores.mask[..., None]
    assert torch.allclose(marg, marginals(scores), atol=1e-12)


def test_span_log_probs_outside_rows_and_dtypes():
    _, scores, patterns = scheme_scores("BIO", ["X"], [3, 0, 1], constrained=True, dtype=torch.float32)
    spans = torch.tensor([[0, 0, 2, 0], [0, 1, 3, 0], [0, 2, 1, 0], [1, 0, 0, 0], [2, 0, 0, 0], [0, -1, 0, 0]])
    log_probs = span_log_probs(scores, spans, patterns)
    assert log_probs.dtype == torch.float32
    assert (log_probs[[1, 2, 3, 5]] == NEG_INF).all()
    assert (log_probs[[0, 4]] > NEG_INF).all()
    every = all_span_log_probs(CRFScores(scores.emissions.half(), *scores[1:]), patterns, 5)
    assert every.dtype == torch.float32 and every.shape == (3, 3, 5, 1)
    assert span_log_probs(scores, torch.zeros(0, 4, dtype=torch.long), patterns).shape == (0,)
    # max_length says how long the spans are; longer ones are not scored
    capped = span_log_probs(scores, spans, patterns, max_length=2)
    assert capped[0] == NEG_INF and capped[4] == log_probs[4]


def test_empty_batch_and_empty_rows():
    _, scores, patterns = scheme_scores("BILUO", ["X"], [0, 0], constrained=True)
    empty = CRFScores(scores.emissions[:, :0], scores.mask[:, :0], *scores[2:])
    assert all_span_log_probs(empty, patterns, 3).shape == (2, 0, 3, 1)
    assert all_span_log_probs(empty, patterns, None, min_log_prob=-1.0).shape == (2, 0, 0, 1)
    assert (span_log_probs(empty, torch.tensor([[0, 0, 0, 0]]), patterns) == NEG_INF).all()
    alphas, betas, log_z = forward_backward(empty)
    assert alphas.shape == betas.shape == (2, 0, 5) and log_z.tolist() == [0.0, 0.0]
    # rows of length 0 in a batch that has tokens
    assert (all_span_log_probs(scores, patterns, 2) == NEG_INF).all()


def test_missing_labels_give_probability_zero():
    _, scores, patterns = scheme_scores("BILUO", ["X"], [4], constrained=False)
    every = all_span_log_probs(scores, patterns, 4)
    no_middle = patterns.clone()
    no_middle[0, 2] = -1  # no I-X: spans of 3 tokens or more cannot be
    cut = all_span_log_probs(scores, no_middle, 4)
    assert torch.equal(cut[:, :, :2], every[:, :, :2])
    assert (cut[:, :, 2:] == NEG_INF).all()
    spans = torch.tensor([[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 2, 0]])
    given = span_log_probs(scores, spans, no_middle)
    assert torch.equal(given[:2], span_log_probs(scores, spans[:2], patterns))
    assert given[2] == NEG_INF


@pytest.mark.parametrize("scheme", ["BILUO", "BIO"])
def test_early_stop_is_exact(scheme):
    _, scores, patterns = scheme_scores(scheme, ["X", "Y"], [12, 3, 0, 9], constrained=True, seed=1)
    full = all_span_log_probs(scores, patterns, 12)
    for threshold in [0.5, 0.1, 1e-2, 1e-4]:
        bound = math.log(threshold)
        pruned = all_span_log_probs(scores, patterns, None, min_log_prob=bound)
        depth = pruned.shape[2]
        assert torch.equal(pruned, full[:, :, :depth])
        assert not (full[:, :, depth:] >= bound).any()
        capped = all_span_log_probs(scores, patterns, 2, min_log_prob=bound)
        assert torch.equal(capped, full[:, :, : capped.shape[2]]) and capped.shape[2] <= 2


def test_span_patterns():
    labels = entity_tags(["PER", "LOC"], "BIO")
    assert span_patterns(labels, "BIO") == (["LOC", "PER"], [(0, 0, 2, 2, 2), (1, 1, 3, 3, 3)])
    labels = entity_tags(["PER"], "IOBES")  # B E I O S
    assert span_patterns(labels, "IOBES") == (["PER"], [(4, 0, 2, 1, -1)])
    assert span_patterns(["O", "B-PER", "L-PER"], "BILUO") == (["PER"], [(-1, 1, -1, 2, -1)])
    assert span_patterns(["O"], "BILUO") == ([], [])
    with pytest.raises(ValueError, match=r"\[E013\]"):
        span_patterns(["O", "U-PER"], "BIO")
    with pytest.raises(ValueError, match=r"\[E014\]"):
        span_patterns(["O"], "none")


# The component's side: a tiny ents tagger whose docs are cut into chunks.

TEXTS = ["Anna lives in New York City", "", "I like Berlin", "New York loves Anna Smith and Berlin too"]


@pytest.fixture(scope="module")
def ner_nlp():
    nlp = make_nlp(factory="crf_ner", model={**SMALL_MODEL, "chunk_size": 3})
    train(nlp, ner_examples(nlp), steps=15)
    return nlp


def every_span(n, n_types):
    return [(i, j, x) for i in range(n) for j in range(i + 1, n + 1) for x in range(n_types)]


def row_reference(scores, row, patterns):
    """Every span probability of one row of a batch, (T, T, n_types), alone."""
    emissions, mask, transitions, start, end = scores[:5]
    return all_span_log_probs(
        CRFScores(emissions[row : row + 1], mask[row : row + 1], transitions, start, end),
        torch.tensor(patterns),
        max(1, emissions.shape[1]),
    )[0].exp()


def test_crf_batch_span_probabilities(ner_nlp):
    tagger = ner_nlp.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, "BILUO")
    docs = [ner_nlp.make_doc(text) for text in TEXTS]
    batch = tagger.model.predict(docs)
    assert batch.rows_per_doc == [2, 1, 1, 3]  # docs of 6, 0, 3 and 8 tokens
    spans = [every_span(len(doc), len(types)) for doc in docs]
    threshold = 0.05
    results = batch.span_probabilities(patterns, spans, threshold=threshold)
    assert len(results) == len(docs)
    row = 0
    for n_rows, doc_spans, result in zip(batch.rows_per_doc, spans, results):
        assert result.given.shape == (len(doc_spans),) and result.given.dtype == numpy.float64
        # the rows of the doc, each alone: span -> probability
        expected = {}
        offset = 0
        for _ in range(n_rows):
            n = batch.row_lengths[row]
            probs = row_reference(batch.scores, row, patterns)
            for i in range(n):
                for size in range(1, n - i + 1):
                    for x in range(len(types)):
                        expected[(offset + i, offset + i + size, x)] = float(probs[i, size - 1, x])
            offset += n
            row += 1
        for (start, end, x), prob in zip(doc_spans, result.given):
            # a span across a chunk's edge is never decoded: probability 0
            assert prob == pytest.approx(expected.get((start, end, x), 0.0), abs=1e-6)
        found = {(s, e, x): p for s, e, x, p in result.found}
        assert [f[:3] for f in result.found] == sorted(found)
        for key, prob in expected.items():
            if prob >= threshold + 1e-6:
                assert found[key] == pytest.approx(prob, abs=1e-6)
            elif prob < threshold - 1e-6:
                assert key not in found
        assert all(key in expected for key in found)
    assert results[1].given.shape == (0,) and results[1].found == []
    # the decoded entities lie in one chunk each and have positive probability
    for doc, result in zip(docs, results):
        doc = ner_nlp(doc)
        index = {span: k for k, span in enumerate(every_span(len(doc), len(types)))}
        for ent in doc.ents:
            assert result.given[index[(ent.start, ent.end, types.index(ent.label_))]] > 0
    # no spans asked, no threshold: empty answers; max_length caps the search
    assert all(r.given.shape == (0,) and r.found == [] for r in batch.span_probabilities(patterns))
    capped = batch.span_probabilities(patterns, threshold=1e-4, max_length=1)
    assert all(e - s == 1 for r in capped for s, e, _, _ in r.found)
    with pytest.raises(ValueError, match="span"):
        batch.span_probabilities(patterns, [[(0, 7, 0)], [], [], []])
    with pytest.raises(ValueError, match="threshold"):
        batch.span_probabilities(patterns, threshold=0.0)


def test_span_probabilities_of_an_all_empty_batch():
    batch = CRFBatch.empty(2, 5, torch.device("cpu"))
    patterns = span_patterns(entity_tags(["X"], "BILUO"), "BILUO")[1]
    results = batch.span_probabilities(patterns, [[], []], threshold=0.1)
    assert [(r.given.shape, r.found) for r in results] == [((0,), []), ((0,), [])]


def test_doc_scores_span_probabilities_join_windows(ner_nlp):
    tagger = ner_nlp.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, "BILUO")
    docs = [ner_nlp.make_doc(text) for text in TEXTS]
    spans = [every_span(len(doc), len(types)) for doc in docs]
    threshold = 0.05
    # no window: the same as the batch
    plain = DocScores(tagger.model, docs).span_probabilities(patterns, spans, threshold=threshold)
    batch = tagger.model.predict(docs).span_probabilities(patterns, spans, threshold=threshold)
    for a, b in zip(plain, batch):
        assert numpy.array_equal(a.given, b.given) and a.found == b.found
    # windows of 4 tokens: each window scored alone, as its own doc
    window = 4
    windowed = DocScores(tagger.model, docs, window=window).span_probabilities(patterns, spans, threshold=threshold)
    for doc, doc_spans, result in zip(docs, spans, windowed):
        if len(doc) <= window:
            reference = DocScores(tagger.model, [doc]).span_probabilities(patterns, [doc_spans], threshold=threshold)[0]
            # the same docs in another batch: equal up to float32 rounding
            assert numpy.allclose(result.given, reference.given, atol=1e-5)
            assert [f[:3] for f in result.found] == [f[:3] for f in reference.found]
            continue
        expected_found = []
        expected = numpy.zeros(len(doc_spans))
        for begin in range(0, len(doc), window):
            part = doc[begin : begin + window].as_doc()
            inside = [k for k, (s, e, _) in enumerate(doc_spans) if begin <= s and e <= begin + len(part)]
            answer = tagger.model.predict([part]).span_probabilities(
                patterns,
                [[(doc_spans[k][0] - begin, doc_spans[k][1] - begin, doc_spans[k][2]) for k in inside]],
                threshold=threshold,
            )[0]
            expected[inside] = answer.given
            expected_found += [(s + begin, e + begin, x, p) for s, e, x, p in answer.found]
        assert numpy.allclose(result.given, expected, atol=1e-5)
        assert [f[:3] for f in result.found] == [f[:3] for f in expected_found]
        # a span across the window's edge has probability 0
        across = [k for k, (s, e, _) in enumerate(doc_spans) if s < window < e]
        assert across and (result.given[across] == 0).all()
