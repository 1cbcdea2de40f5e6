"""The CRF maths (the torch reference, spacy_crf.nn.crf) against brute-force
enumeration of every label path. tests/nn/test_triton_crf.py tests the kernels
against it."""

import math

import pytest
import torch

from spacy_crf.nn.crf import (
    CRFScores,
    allowed_from_tags,
    log_partition,
    marginals,
    nbest_decode,
    negative_log_likelihood,
    path_score,
    viterbi_decode,
)
from spacy_crf.nn.loss import crf_loss

from ..helpers import all_paths, brute_log_z, brute_score, random_batch

CASES = [
    (seed, lengths, n_labels)
    for seed, (lengths, n_labels) in enumerate(
        [
            ([1], 1),
            ([1], 3),
            ([5], 2),
            ([3, 1, 5, 2], 3),
            ([1, 1, 1], 4),
            ([4, 5, 3, 2, 1], 3),
            ([2, 0, 3], 3),
            ([5, 4], 4),
        ]
        * 4
    )
]


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_log_partition_and_path_score_equal_brute_force(seed, lengths, n_labels):
    scores = random_batch(seed, lengths, n_labels)
    log_z = log_partition(scores)
    gen = torch.Generator().manual_seed(seed + 1000)
    tags = torch.randint(n_labels, scores.mask.shape, generator=gen)
    got_scores = path_score(scores, tags)
    for b, length in enumerate(lengths):
        if length == 0:
            assert log_z[b] == 0 and got_scores[b] == 0
            continue
        assert float(log_z[b]) == pytest.approx(brute_log_z(scores, b, length), abs=1e-9)
        expected = brute_score(scores, b, tags[b, :length].tolist())
        assert float(got_scores[b]) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_nll_equals_brute_force(seed, lengths, n_labels):
    scores = random_batch(seed, lengths, n_labels)
    gen = torch.Generator().manual_seed(seed + 2000)
    tags = torch.randint(n_labels, scores.mask.shape, generator=gen)
    nll = negative_log_likelihood(scores, allowed_from_tags(tags, n_labels))
    for b, length in enumerate(lengths):
        if length == 0:
            assert nll[b] == 0
            continue
        expected = brute_log_z(scores, b, length) - brute_score(scores, b, tags[b, :length].tolist())
        assert float(nll[b]) == pytest.approx(expected, abs=1e-9)
        assert float(nll[b]) >= 0


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_partial_label_nll_equals_brute_force(seed, lengths, n_labels):
    scores = random_batch(seed, lengths, n_labels)
    gen = torch.Generator().manual_seed(seed + 3000)
    tags = torch.randint(n_labels, scores.mask.shape, generator=gen)
    unknown = torch.rand(scores.mask.shape, generator=gen) < 0.5
    tags = tags.masked_fill(unknown, -1)
    excluded = torch.randint(n_labels, scores.mask.shape, generator=gen)
    excluded = excluded.masked_fill(~unknown | (torch.rand(unknown.shape, generator=gen) < 0.5), -1)
    if n_labels == 1:
        excluded.fill_(-1)
    allowed = allowed_from_tags(tags, n_labels, excluded=excluded)
    nll = negative_log_likelihood(scores, allowed)
    for b, length in enumerate(lengths):
        if length == 0:
            assert nll[b] == 0
            continue
        expected = brute_log_z(scores, b, length) - brute_log_z(scores, b, length, allowed)
        assert float(nll[b]) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_grouped_label_nll_equals_brute_force(seed, lengths, n_labels):
    """Labels known in part (K + g: any label of group g, e.g. a UPOS
    without its features) beside known, unknown and excluded ones: crf_loss
    is log Z less the log-sum of the paths through the allowed labels, the
    paths enumerated and filtered here by the groups' sets themselves."""
    scores = random_batch(seed, lengths, n_labels)
    gen = torch.Generator().manual_seed(seed + 4000)
    groups = torch.rand(3, n_labels, generator=gen) < 0.5
    groups[:, 0] = True  # no empty group
    kind = torch.randint(3, scores.mask.shape, generator=gen)  # 0 known, 1 unknown, 2 group
    tags = torch.randint(n_labels, scores.mask.shape, generator=gen)
    in_group = torch.randint(3, scores.mask.shape, generator=gen)
    tags = torch.where(kind == 1, -1, torch.where(kind == 2, n_labels + in_group, tags))
    loss = crf_loss(scores, tags, groups=groups)
    expected = 0.0
    for b, length in enumerate(lengths):
        if length == 0:
            continue

        def agrees(path, b=b):
            for t, y in enumerate(path):
                tag = int(tags[b, t])
                if (0 <= tag < n_labels and y != tag) or (tag >= n_labels and not groups[tag - n_labels, y]):
                    return False
            return True

        values = [brute_score(scores, b, path) for path in all_paths(length, n_labels) if agrees(path)]
        expected += brute_log_z(scores, b, length) - float(
            torch.logsumexp(torch.tensor(values, dtype=torch.float64), 0)
        )
    assert float(loss) == pytest.approx(expected, abs=1e-9)


def test_nll_is_zero_without_known_labels():
    scores = random_batch(0, [3, 1, 4], 3)
    allowed = torch.ones_like(scores.emissions, dtype=torch.bool)
    assert torch.equal(negative_log_likelihood(scores, allowed), torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_viterbi_equals_brute_force(seed, lengths, n_labels, compact):
    scores = random_batch(seed, lengths, n_labels)
    paths, best = viterbi_decode(scores, compact=compact)
    assert paths.shape == scores.mask.shape and paths.dtype == torch.long
    for b, length in enumerate(lengths):
        if length == 0:
            assert best[b] == 0
            continue
        candidates = all_paths(length, n_labels)
        values = [brute_score(scores, b, p) for p in candidates]
        top = max(range(len(values)), key=values.__getitem__)
        assert tuple(paths[b, :length].tolist()) == candidates[top]
        assert float(best[b]) == pytest.approx(values[top], abs=1e-9)
        # padded steps repeat the last label: backtracking began at this
        # sequence's own last token
        assert set(paths[b, length - 1 :].tolist()) == {paths[b, length - 1].item()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compact_and_masked_viterbi_agree_on_random_batches(dtype):
    """The length-ordered (CPU) and whole-batch (GPU) loops give the same
    paths and scores, ties included, on batches with empty and length-1 rows."""
    gen = torch.Generator().manual_seed(3)
    for trial in range(20):
        B = int(torch.randint(1, 40, (1,), generator=gen))
        lengths = torch.randint(0, 25, (B,), generator=gen).tolist()
        scores = random_batch(trial, lengths, 1 + trial % 7, dtype=dtype)
        if trial % 4 == 0:  # integer scores: many tied paths
            scores = CRFScores(scores.emissions.round(), scores.mask, scores.transitions.round(), *scores[3:])
        compact_paths, compact_best = viterbi_decode(scores, compact=True)
        masked_paths, masked_best = viterbi_decode(scores, compact=False)
        assert torch.equal(compact_paths, masked_paths)
        assert torch.equal(compact_best, masked_best)


def test_viterbi_matches_unpadded_decoding():
    scores = random_batch(7, [6, 2, 9, 1, 4], 5, dtype=torch.float32)
    paths, best = viterbi_decode(scores)
    for b, length in enumerate(scores.mask.sum(1).tolist()):
        single = CRFScores(
            scores.emissions[b : b + 1, :length],
            scores.mask[b : b + 1, :length],
            *scores[2:],
        )
        alone, alone_best = viterbi_decode(single)
        assert torch.equal(alone[0], paths[b, :length])
        assert torch.allclose(alone_best[0], best[b])


def test_float32_and_float16_inputs_are_computed_in_float32():
    scores = random_batch(3, [4, 2], 3, dtype=torch.float32)
    half = CRFScores(scores.emissions.half(), *scores[1:])
    assert log_partition(half).dtype == torch.float32
    assert viterbi_decode(half)[1].dtype == torch.float32


def test_empty_time_axis():
    scores = random_batch(0, [0, 0], 3)
    scores = CRFScores(scores.emissions[:, :0], scores.mask[:, :0], *scores[2:])
    paths, best = viterbi_decode(scores)
    assert paths.shape == (2, 0)
    assert torch.equal(log_partition(scores), torch.zeros(2, dtype=torch.float64))
    allowed = torch.ones(2, 0, 3, dtype=torch.bool)
    assert torch.equal(negative_log_likelihood(scores, allowed), torch.zeros(2, dtype=torch.float64))
    assert torch.equal(path_score(scores, torch.zeros(2, 0, dtype=torch.long)), torch.zeros(2, dtype=torch.float64))


@pytest.mark.parametrize("partial", [False, True])
def test_gradcheck_nll(partial):
    scores = random_batch(11, [3, 1, 2], 3)
    gen = torch.Generator().manual_seed(5)
    tags = torch.randint(3, scores.mask.shape, generator=gen)
    if partial:
        tags[0, 1] = -1
        tags[2, 0] = -1
    allowed = allowed_from_tags(tags, 3)
    inputs = tuple(
        t.detach().clone().requires_grad_(True)
        for t in (scores.emissions, scores.transitions, scores.start, scores.end)
    )

    def loss(emissions, transitions, start, end):
        return negative_log_likelihood(CRFScores(emissions, scores.mask, transitions, start, end), allowed)

    assert torch.autograd.gradcheck(loss, inputs)


def test_emission_gradient_is_marginals_minus_gold():
    """d NLL / d emissions = expected counts - observed counts."""
    lengths, K = [3, 2], 3
    scores = random_batch(2, lengths, K)
    tags = torch.tensor([[0, 2, 1], [1, 1, 0]])
    emissions = scores.emissions.clone().requires_grad_(True)
    nll = negative_log_likelihood(CRFScores(emissions, *scores[1:]), allowed_from_tags(tags, K))
    (grad,) = torch.autograd.grad(nll.sum(), emissions)
    for b, length in enumerate(lengths):
        log_z = brute_log_z(scores, b, length)
        marginals = torch.zeros(length, K, dtype=torch.float64)
        for path in all_paths(length, K):
            p = torch.exp(torch.tensor(brute_score(scores, b, path) - log_z))
            for t, y in enumerate(path):
                marginals[t, y] += p
        gold = torch.nn.functional.one_hot(tags[b, :length], K).double()
        assert torch.allclose(grad[b, :length], marginals - gold, atol=1e-9)
        assert torch.all(grad[b, length:] == 0)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    n_labels=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    unknown_rate=st.floats(0, 1),
)
def test_property_viterbi_is_the_best_path_and_nll_is_non_negative(lengths, n_labels, seed, unknown_rate):
    scores = random_batch(seed, lengths, n_labels, dtype=torch.float32)
    paths, best = viterbi_decode(scores)
    gen = torch.Generator().manual_seed(seed)
    tags = torch.randint(n_labels, scores.mask.shape, generator=gen)
    tags = tags.masked_fill(torch.rand(tags.shape, generator=gen) < unknown_rate, -1)
    nll = negative_log_likelihood(scores, allowed_from_tags(tags, n_labels))
    assert torch.all(nll >= -1e-4)
    for b, length in enumerate(lengths):
        assert all(0 <= y < n_labels for y in paths[b].tolist())
        if length == 0:
            continue
        top = max(brute_score(scores, b, p) for p in all_paths(length, n_labels))
        assert brute_score(scores, b, paths[b, :length].tolist()) == pytest.approx(top, abs=1e-4)
        assert float(best[b]) == pytest.approx(top, abs=1e-4)


@pytest.mark.parametrize("seed,lengths,n_labels", CASES[:16])
def test_marginals_equal_brute_force(seed, lengths, n_labels):
    scores = random_batch(seed, lengths, n_labels)
    probs = marginals(scores)
    for b, length in enumerate(lengths):
        assert torch.all(probs[b, length:] == 0)
        if length == 0:
            continue
        log_z = brute_log_z(scores, b, length)
        expected = torch.zeros(length, n_labels, dtype=torch.float64)
        for path in all_paths(length, n_labels):
            p = math.exp(brute_score(scores, b, path) - log_z)
            for t, y in enumerate(path):
                expected[t, y] += p
        assert torch.allclose(probs[b, :length], expected, atol=1e-9)
        assert torch.allclose(probs[b, :length].sum(-1), torch.ones(length, dtype=torch.float64))


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("seed,lengths,n_labels", CASES[:16])
def test_nbest_equals_brute_force(seed, lengths, n_labels, k):
    scores = random_batch(seed, lengths, n_labels)
    paths, values = nbest_decode(scores, k)
    assert paths.shape == (len(lengths), k, scores.mask.shape[1])
    if k == 1:
        best_paths, best = viterbi_decode(scores)
        assert torch.equal(paths[:, 0], best_paths)
        assert torch.allclose(values[:, 0], best)
    for b, length in enumerate(lengths):
        if length == 0:
            continue
        ranked = sorted((brute_score(scores, b, p) for p in all_paths(length, n_labels)), reverse=True)
        n = min(k, len(ranked))
        assert values[b, :n].tolist() == pytest.approx(ranked[:n], abs=1e-9)
        assert torch.all(torch.isinf(values[b, n:]))
        for r in range(n):
            assert brute_score(scores, b, paths[b, r, :length].tolist()) == pytest.approx(values[b, r].item(), abs=1e-9)
        assert len({tuple(paths[b, r, :length].tolist()) for r in range(n)}) == n


@pytest.mark.parametrize("seed", range(6))
def test_marginals_agree_with_the_nll_of_forced_labels(seed):
    """p(y_t = j) = exp(-NLL) when only token t is labelled, with label j."""
    lengths, K = [4, 1, 3], 3
    scores = random_batch(seed, lengths, K)
    probs = marginals(scores)
    for t in range(4):
        for j in range(K):
            tags = torch.full(scores.mask.shape, -1)
            tags[:, t] = j
            nll = negative_log_likelihood(scores, allowed_from_tags(tags, K))
            for b, length in enumerate(lengths):
                if t < length:
                    assert float(torch.exp(-nll[b])) == pytest.approx(float(probs[b, t, j]), abs=1e-9)


def test_shape_errors_name_the_shapes():
    scores = random_batch(0, [2, 1], 3)
    bad = [
        CRFScores(scores.emissions[0], *scores[1:]),
        CRFScores(scores.emissions, scores.mask[:, :1], *scores[2:]),
        CRFScores(scores.emissions, scores.mask.int(), *scores[2:]),
        CRFScores(*scores[:2], scores.transitions[:2], *scores[3:]),
        CRFScores(*scores[:3], scores.start[:2], scores.end),
    ]
    for broken in bad:
        for fn in (log_partition, viterbi_decode, lambda s: nbest_decode(s, 2)):
            with pytest.raises(ValueError, match=r"must be"):
                fn(broken)
    with pytest.raises(ValueError, match=r"allowed must be \(2, 2, 3\)"):
        negative_log_likelihood(scores, torch.ones(2, 2, 2, dtype=torch.bool))


@pytest.mark.gpu
def test_cuda_viterbi_and_nll_equal_the_cpu_results():
    """On CUDA both Viterbi loops and the NLL give the CPU results."""
    scores = random_batch(9, [7, 0, 1, 12, 3], 6, dtype=torch.float32)
    cuda = CRFScores(*(x.cuda() for x in scores[:5]))
    cpu_paths, cpu_best = viterbi_decode(scores)
    for compact in (None, True, False):
        paths, best = viterbi_decode(cuda, compact=compact)
        assert paths.is_cuda
        assert torch.equal(paths.cpu(), cpu_paths)
        assert torch.allclose(best.cpu(), cpu_best, atol=1e-4)
    tags = torch.randint(6, scores.mask.shape, generator=torch.Generator().manual_seed(1))
    allowed = allowed_from_tags(tags, 6)
    expected = negative_log_likelihood(scores, allowed)
    got = negative_log_likelihood(cuda, allowed.cuda())
    assert torch.allclose(got.cpu(), expected, atol=1e-3)


def test_time_loops_never_read_the_device():
    """The GPU paths have no data-dependent host read (the syncs of a GPU):
    on the meta device, which has shapes but no data, any .item(), .tolist(),
    bool(tensor) or data-dependent shape would raise."""
    B, T, K = 3, 7, 5

    def meta(*shape, grad=False):
        return torch.empty(*shape, device="meta", requires_grad=grad)

    emissions, transitions = meta(B, T, K, grad=True), meta(K, K, grad=True)
    mask = torch.ones(B, T, dtype=torch.bool, device="meta")
    scores = CRFScores(emissions, mask, transitions, meta(K), meta(K))
    log_partition(scores).sum().backward()
    assert emissions.grad.shape == (B, T, K) and transitions.grad.shape == (K, K)
    paths, best = viterbi_decode(scores, compact=False)
    assert paths.shape == (B, T) and best.shape == (B,)
    assert marginals(scores).shape == (B, T, K)


@pytest.mark.parametrize("limit", [1, 7, 40])
@pytest.mark.parametrize("compact", [True, False])
def test_decoding_in_label_blocks_equals_all_at_once(monkeypatch, limit, compact):
    """With many labels a decoding step scores the next labels a block at a
    time (bounded memory): Viterbi and n-best give exactly what one block gives."""
    from spacy_crf.nn import crf

    scores = random_batch(3, [5, 0, 1, 4, 5], 6, dtype=torch.float32)
    paths, best = viterbi_decode(scores, compact=compact)
    top_paths, top = nbest_decode(scores, 3)
    monkeypatch.setattr(crf, "MAX_STEP_ELEMENTS", limit)
    assert crf._label_block(5, 6) < 6
    blocked_paths, blocked_best = viterbi_decode(scores, compact=compact)
    blocked_top_paths, blocked_top = nbest_decode(scores, 3)
    assert torch.equal(paths, blocked_paths) and torch.equal(best, blocked_best)
    assert torch.equal(top_paths, blocked_top_paths) and torch.equal(top, blocked_top)
