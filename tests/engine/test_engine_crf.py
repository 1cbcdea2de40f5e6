"""The torch-free engine's CRF maths against brute-force enumeration of
every path, on tiny padded batches with rows of length 0 to 3 and forbidden
(NEG_INF) transitions: log Z, marginals, Viterbi (numpy and Numba), n-best
and entity span probabilities. Float64 brute force; the engine runs float32
(tolerances: a few float32 units of the summed scores, ~1e-5)."""

import itertools

import numpy
import pytest

from spacy_crf.engine import NEG_INF, crf, spans, viterbi

K = 3
T = 3


def batch(seed):
    rng = numpy.random.default_rng(seed)
    lengths = numpy.array([0, 1, 2, 3, rng.integers(0, T + 1)])
    B = len(lengths)
    mask = numpy.arange(T)[None, :] < lengths[:, None]
    emissions = numpy.where(mask[:, :, None], rng.standard_normal((B, T, K)), 0.0).astype(numpy.float32)
    transitions = rng.standard_normal((K, K)).astype(numpy.float32)
    transitions[0, 2] = NEG_INF  # a forbidden transition
    start, end = rng.standard_normal(K).astype(numpy.float32), rng.standard_normal(K).astype(numpy.float32)
    return emissions, mask, lengths, transitions, start, end


def score(emissions, transitions, start, end, b, path):
    total = float(start[path[0]]) + float(end[path[-1]])
    total += sum(float(emissions[b, t, y]) for t, y in enumerate(path))
    total += sum(float(transitions[a, c]) for a, c in zip(path, path[1:]))
    return total


def paths_of(n):
    return list(itertools.product(range(K), repeat=n))


@pytest.mark.parametrize("seed", range(4))
def test_partition_marginals_viterbi_nbest(seed, monkeypatch):
    emissions, mask, lengths, transitions, start, end = batch(seed)
    _, _, log_z = crf.forward_backward(emissions, mask, transitions, start, end)
    probs = crf.marginals(emissions, mask, transitions, start, end)
    paths, best = viterbi.viterbi_decode(emissions, lengths, transitions, start, end)
    monkeypatch.setattr(viterbi, "SMALL_BATCH", 0)  # Numba's kernel
    kernel_paths, kernel_best = viterbi.viterbi_decode(emissions, lengths, transitions, start, end)
    numpy.testing.assert_array_equal(kernel_best, best)
    nbest_paths, nbest_scores = crf.nbest_decode(emissions, mask, transitions, start, end, 4)
    for b, n in enumerate(lengths):
        if n == 0:
            assert log_z[b] == 0 and best[b] == 0 and not probs[b].any()
            continue
        scored = sorted(((score(emissions, transitions, start, end, b, p), p) for p in paths_of(n)), reverse=True)
        values = numpy.array([s for s, _ in scored])
        top = values.max()
        assert log_z[b] == pytest.approx(top + numpy.log(numpy.exp(values - top).sum()), abs=1e-4)
        weights = numpy.exp(values - log_z[b])
        for t in range(n):
            want = [sum(w for w, (_, p) in zip(weights, scored) if p[t] == y) for y in range(K)]
            numpy.testing.assert_allclose(probs[b, t], want, atol=1e-5)
        assert tuple(paths[b, :n]) == scored[0][1] and best[b] == pytest.approx(scored[0][0], abs=1e-4)
        assert tuple(kernel_paths[b, :n]) == scored[0][1]
        finite = [(s, p) for s, p in scored if s > NEG_INF / 2]
        for r in range(min(4, len(finite))):
            assert nbest_scores[b, r] == pytest.approx(finite[r][0], abs=1e-4)
        assert [tuple(p[:n]) for p in nbest_paths[b, : min(4, len(finite))]] == [p for _, p in finite[:4]]


@pytest.mark.parametrize("seed", range(4))
def test_span_probabilities(seed):
    """BILU-like patterns over K = 3 labels: B=0, I=1, L=2 with a single of 1
    and 'not_after' = 1 (an entity is not followed by I)."""
    emissions, mask, lengths, transitions, start, end = batch(seed)
    patterns = numpy.array([[1, 0, 1, 2, 1]], dtype=numpy.int64)
    passes = crf.forward_backward(emissions, mask, transitions, start, end)
    asked = [(b, i, j, 0) for b, n in enumerate(lengths) for i in range(n) for j in range(i, n)]
    got = numpy.exp(
        spans.span_log_probs(emissions, mask, transitions, end, passes, numpy.array(asked), patterns, max_length=T)
    )
    every = spans.all_span_log_probs(emissions, mask, transitions, end, passes, patterns, T, numpy.log(1e-9))
    for (b, i, j, _), p in zip(asked, got):
        n = lengths[b]
        all_paths = paths_of(n)
        weights = numpy.array([score(emissions, transitions, start, end, b, q) for q in all_paths])
        weights = numpy.exp(weights - weights.max())
        labels = [1] if i == j else [0] + [1] * (j - i - 1) + [2]

        def is_span(q, i=i, j=j, n=n, labels=labels):
            return list(q[i : j + 1]) == labels and (j + 1 >= n or q[j + 1] != 1)

        want = sum(w for w, q in zip(weights, all_paths) if is_span(q)) / weights.sum()
        assert p == pytest.approx(want, abs=1e-5)
        if j - i < every.shape[2]:
            assert numpy.exp(every[b, i, j - i, 0]) == pytest.approx(want, abs=1e-5)


def test_nbest_in_blocks_equals_whole(monkeypatch):
    emissions, mask, _, transitions, start, end = batch(7)
    whole = crf.nbest_decode(emissions, mask, transitions, start, end, 3)
    monkeypatch.setattr(crf, "NBEST_BLOCK", K * K * 3 * 2)  # two rows a block
    blocks = crf.nbest_decode(emissions, mask, transitions, start, end, 3)
    numpy.testing.assert_array_equal(whole[0], blocks[0])
    numpy.testing.assert_array_equal(whole[1], blocks[1])


def test_without_numba_numpy_decodes_every_batch(monkeypatch):
    """Numba missing or unable to set up (W001): numpy's recursion decodes
    any batch, a block of rows at a time, with the kernel's paths."""
    emissions, mask, lengths, transitions, start, end = batch(3)
    monkeypatch.setattr(viterbi, "SMALL_BATCH", 0)
    with_kernel = viterbi.viterbi_decode(emissions, lengths, transitions, start, end)
    monkeypatch.setattr(viterbi, "_kernels", lambda: None)
    monkeypatch.setattr(viterbi, "SMALL_BATCH", T * K * K * 2)  # two rows a block
    without = viterbi.viterbi_decode(emissions, lengths, transitions, start, end)
    numpy.testing.assert_array_equal(without[0], with_kernel[0])
    numpy.testing.assert_array_equal(without[1], with_kernel[1])


def test_a_numba_that_cannot_set_up_warns(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == "viterbi_kernels" or (args and args[2] and "viterbi_kernels" in args[2]):
            raise RuntimeError("cannot cache function 'full_kernel': no locator available")
        return real_import(name, *args, **kwargs)

    viterbi._kernels.cache_clear()
    monkeypatch.setattr(builtins, "__import__", failing)
    try:
        with pytest.warns(UserWarning, match=r"\[W001\]"):
            assert viterbi._kernels() is None
    finally:
        monkeypatch.undo()
        viterbi._kernels.cache_clear()
