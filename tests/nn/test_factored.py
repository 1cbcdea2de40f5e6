"""Class-factored transitions (spacy_crf.nn.factored) against brute-force
enumeration and against the dense reference (crf.py) on the same scores:
log Z and its gradient (to the factors), the partial-label NLL, marginals,
forward-backward, Viterbi and n-best, with lengths 0 and 1 and padding."""

import pytest
import torch

from spacy_crf.nn import crf, factored, spans
from spacy_crf.nn.crf import CRFScores, allowed_from_tags
from spacy_crf.nn.kernels import dispatch

from ..helpers import all_paths, brute_log_z, brute_score

CASES = [
    # seed, lengths, classes of the labels
    (0, [1], [0]),
    (1, [1], [0, 1, 0]),
    (2, [5], [0, 0]),
    (3, [3, 1, 5, 2], [0, 1, 1]),
    (4, [2, 0, 3], [1, 0, 1, 0]),
    (5, [4, 5, 3, 2, 1], [0, 1, 2]),
    (6, [5, 4], [2, 0, 1, 1]),
    (7, [0, 0], [0, 1]),
]


def factored_batch(seed, lengths, classes, dtype=torch.float64, requires_grad=False):
    """Random emissions and factors; the scores carry the dense matrix and the classes."""
    gen = torch.Generator().manual_seed(seed)
    K, C = len(classes), max(classes) + 1
    B, T = len(lengths), max(max(lengths), 1)
    pair, leave, enter = (
        (torch.randn(*shape, generator=gen, dtype=dtype) * 1.5).requires_grad_(requires_grad)
        for shape in [(C, C), (K,), (K,)]
    )
    classes_t = torch.tensor(classes)
    scores = CRFScores(
        torch.randn(B, T, K, generator=gen, dtype=dtype) * 2,
        torch.arange(T) < torch.tensor(lengths)[:, None],
        factored.factored_transitions(pair, leave, enter, classes_t),
        torch.randn(K, generator=gen, dtype=dtype),
        torch.randn(K, generator=gen, dtype=dtype),
        classes_t,
    )
    return scores, (pair, leave, enter)


def dense(scores):
    return scores._replace(classes=None)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_factored_matrix_is_its_formula(seed, lengths, classes):
    scores, (pair, leave, enter) = factored_batch(seed, lengths, classes)
    K = len(classes)
    for i in range(K):
        for j in range(K):
            expected = pair[classes[i], classes[j]] + leave[i] + enter[j]
            assert float(scores.transitions[i, j]) == pytest.approx(float(expected), abs=1e-12)
    parts = factored.split(scores.transitions, scores.classes)
    classes_t = scores.classes
    rebuilt = parts.leave[:, None] + parts.pair[classes_t][:, classes_t] + parts.enter[None, :]
    assert torch.allclose(rebuilt, scores.transitions, atol=1e-12)
    assert torch.allclose(parts.into_class()[:, classes_t] + parts.enter, scores.transitions, atol=1e-12)
    assert parts.membership.sum(1).tolist() == [1.0] * K


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_log_partition_equals_brute_force(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes)
    log_z = factored.log_partition(scores)
    for b, length in enumerate(lengths):
        expected = brute_log_z(scores, b, length) if length else 0.0
        assert float(log_z[b]) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_gradient_to_the_factors_equals_the_dense_code(seed, lengths, classes):
    grads = []
    for run in (factored.log_partition, lambda s: crf.log_partition(dense(s))):
        scores, parameters = factored_batch(seed, lengths, classes, requires_grad=True)
        emissions = scores.emissions.requires_grad_(True)
        start = scores.start.requires_grad_(True)
        run(scores._replace(emissions=emissions, start=start)).sum().backward()
        leaves = [emissions, start, *parameters]
        grads.append([torch.zeros_like(x) if x.grad is None else x.grad for x in leaves])
    for fast, reference in zip(*grads):
        assert torch.allclose(fast, reference, atol=1e-9)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_partial_label_nll_equals_brute_force(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes)
    gen = torch.Generator().manual_seed(seed + 100)
    K = len(classes)
    gold = torch.randint(0, K, scores.mask.shape, generator=gen)
    gold[torch.rand(scores.mask.shape, generator=gen) < 0.4] = -1  # unknown labels
    allowed = allowed_from_tags(gold, K)
    nll = dispatch.negative_log_likelihood(scores, allowed, kernels="torch")
    for b, length in enumerate(lengths):
        if not length:
            assert float(nll[b]) == 0.0
            continue
        expected = brute_log_z(scores, b, length) - brute_log_z(scores, b, length, allowed)
        assert float(nll[b]) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_marginals_and_passes_equal_the_dense_code(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes)
    assert torch.allclose(factored.marginals(scores), crf.marginals(dense(scores)), atol=1e-9)
    fast = spans.forward_backward(scores)
    reference = spans.forward_backward(dense(scores))
    mask = scores.mask[..., None]
    for x, y in zip(fast[:2], reference[:2]):
        assert torch.allclose(x * mask, y * mask, atol=1e-9)
    assert torch.allclose(fast[2], reference[2], atol=1e-9)


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_viterbi_equals_brute_force(seed, lengths, classes, compact):
    scores, _ = factored_batch(seed, lengths, classes)
    paths, best = factored.viterbi_decode(scores, compact=compact)
    reference, _ = crf.viterbi_decode(dense(scores), compact=compact)
    assert torch.equal(paths, reference)  # padded steps repeat the last label, as there
    assert paths.shape == scores.mask.shape
    for b, length in enumerate(lengths):
        if not length:
            assert float(best[b]) == 0.0
            continue
        K = len(classes)
        expected = max(brute_score(scores, b, path) for path in all_paths(length, K))
        path = paths[b, :length].tolist()
        assert float(best[b]) == pytest.approx(expected, abs=1e-9)
        assert brute_score(scores, b, path) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_nbest_equals_brute_force(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes)
    k = 4
    paths, values = factored.nbest_decode(scores, k)
    assert paths.shape == (len(lengths), k, scores.mask.shape[1])
    for b, length in enumerate(lengths):
        if not length:
            continue
        ranked = sorted((brute_score(scores, b, p) for p in all_paths(length, len(classes))), reverse=True)
        n = min(k, len(ranked))
        assert values[b, :n].tolist() == pytest.approx(ranked[:n], abs=1e-9)
        assert all(v == float("-inf") for v in values[b, n:].tolist())
        for r in range(n):
            assert brute_score(scores, b, paths[b, r, :length].tolist()) == pytest.approx(ranked[r], abs=1e-9)


def test_dispatch_routes_factored_scores_and_float32_agrees():
    scores, _ = factored_batch(11, [6, 3, 1, 0], [0, 1, 2, 1, 0, 2, 2], dtype=torch.float32)
    reference = dense(scores)
    paths, best = dispatch.viterbi_decode(scores, kernels="torch")
    ref_paths, ref_best = crf.viterbi_decode(reference)
    assert torch.allclose(best, ref_best, atol=1e-4)
    assert torch.allclose(dispatch.log_partition(scores), crf.log_partition(reference), atol=1e-4)
    assert torch.allclose(dispatch.marginals(scores), crf.marginals(reference), atol=1e-5)
    values, _ = dispatch.nbest_decode(scores, 3)[1], None
    assert torch.allclose(values, crf.nbest_decode(reference, 3)[1], atol=1e-4)


def test_bad_classes_are_refused():
    scores, _ = factored_batch(0, [3], [0, 1, 0])
    with pytest.raises(ValueError, match="classes"):
        factored.log_partition(scores._replace(classes=torch.tensor([0, 1])))
