"""The fused Viterbi kernel for class-factored transitions
(spacy_crf.nn.kernels.triton_factored) against factored.py's torch code and brute
force: lengths 0 and 1, padding, ties, more labels than one block, and the
dispatch that sends factored CUDA batches of any K to it.

Without CUDA the kernel runs on CPU tensors through Triton's interpreter
(tests/conftest.py turns it on before Triton is imported); with CUDA the
`gpu` test runs it compiled at a morphological tagger's shape."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

triton = pytest.importorskip("triton", minversion="3.0")

from spacy_crf.nn import factored  # noqa: E402
from spacy_crf.nn.kernels import dispatch, triton_factored  # noqa: E402

from ..helpers import all_paths, brute_score  # noqa: E402
from .test_factored import CASES, factored_batch  # noqa: E402

# where the kernels can run neither on CUDA nor in the interpreter, that
# module skips itself, and so this one
from .test_triton_crf import DEVICE  # noqa: E402


def on_device(scores):
    return scores._replace(**{name: getattr(scores, name).to(DEVICE) for name in scores._fields})


def many_labels(seed, lengths, K, C, dtype=torch.float32):
    """A factored batch with K labels in C classes (every class used)."""
    classes = [k % C for k in torch.randperm(K, generator=torch.Generator().manual_seed(seed)).tolist()]
    scores, _ = factored_batch(seed, lengths, classes, dtype=dtype)
    return scores


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_kernel_equals_the_torch_code_and_brute_force(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes, dtype=torch.float32)
    paths, best = triton_factored.viterbi_decode(on_device(scores))
    ref_paths, ref_best = factored.viterbi_decode(scores)
    assert torch.equal(paths.cpu(), ref_paths)  # padded steps repeat the last label, as there
    assert torch.equal(best.cpu(), ref_best)
    for b, length in enumerate(lengths):
        if not length:
            assert float(best[b]) == 0.0
            continue
        expected = max(brute_score(scores, b, path) for path in all_paths(length, len(classes)))
        assert float(best[b]) == pytest.approx(expected, abs=1e-4)
        assert brute_score(scores, b, paths[b, :length].tolist()) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("K,C,lengths", [(300, 17, [7, 0, 1, 4]), (513, 5, [3, 6])])
def test_more_labels_than_a_block(K, C, lengths):
    """K above the kernel's block of labels (and above the dense kernels' 128):
    the same paths and scores as the torch code."""
    assert K > triton_factored.BLOCK_K
    scores = many_labels(K + C, lengths, K, C)
    paths, best = triton_factored.viterbi_decode(on_device(scores))
    ref_paths, ref_best = factored.viterbi_decode(scores)
    assert torch.equal(paths.cpu(), ref_paths)
    assert torch.equal(best.cpu(), ref_best)


def test_ties_go_to_the_lowest_label_as_in_the_torch_code():
    """Integer scores tie everywhere: the kernel picks the labels torch's argmax picks."""
    scores = many_labels(3, [5, 2, 1], 260, 3)
    gen = torch.Generator().manual_seed(5)
    integral = scores._replace(
        emissions=torch.randint(0, 2, scores.emissions.shape, generator=gen).float(),
        transitions=torch.zeros_like(scores.transitions),
        start=torch.zeros_like(scores.start),
        end=torch.zeros_like(scores.end),
    )
    paths, best = triton_factored.viterbi_decode(on_device(integral))
    ref_paths, ref_best = factored.viterbi_decode(integral)
    assert torch.equal(paths.cpu(), ref_paths)
    assert torch.equal(best.cpu(), ref_best)


def test_float16_emissions_are_scored_in_float32():
    scores = many_labels(9, [4, 3], 140, 7)
    half = scores._replace(emissions=scores.emissions.half())
    paths, _ = triton_factored.viterbi_decode(on_device(half))
    ref_paths, _ = factored.viterbi_decode(half)
    assert torch.equal(paths.cpu(), ref_paths)


def test_dispatch_sends_factored_batches_of_any_size_to_the_kernel():
    small = on_device(many_labels(1, [3, 2], 20, 4))
    large = on_device(many_labels(2, [3, 2], 200, 4))
    mode = "auto" if DEVICE == "cuda" else "triton"
    # the dense kernels take up to 128 labels; factored batches of any K go to this one
    assert dispatch.use_kernels(small.emissions, kernels=mode)
    assert not dispatch.use_kernels(large.emissions, kernels=mode)
    assert dispatch.use_kernels(large.emissions, kernels=mode, max_labels=None)
    assert not dispatch.use_kernels(large.emissions, kernels="torch", max_labels=None)
    for scores in (small, large):
        paths, _ = dispatch.viterbi_decode(scores, kernels=mode)
        ref_paths, _ = factored.viterbi_decode(scores)
        assert torch.equal(paths, ref_paths)


def test_empty_batches():
    scores = many_labels(4, [2], 150, 3)
    for B, T in [(0, 2), (1, 0)]:
        empty = scores._replace(
            emissions=scores.emissions.new_zeros(B, T, 150), mask=torch.zeros(B, T, dtype=torch.bool)
        )
        paths, best = triton_factored.viterbi_decode(on_device(empty))
        assert paths.shape == (B, T) and best.shape == (B,) and not best.any()


@pytest.mark.gpu
def test_cuda_kernel_at_a_morphological_taggers_shape():
    """Turkish IMST's bundles (981 labels, 17 UPOS classes) over a dev-sized
    batch: the compiled kernel gives the torch code's paths on the GPU."""
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 347, (110,), generator=gen).tolist()
    lengths[:2] = [346, 0]
    scores = on_device(many_labels(0, lengths, 981, 17))
    paths, best = dispatch.viterbi_decode(scores, kernels="auto")
    ref_paths, ref_best = factored.viterbi_decode(scores)
    assert torch.equal(paths, ref_paths)
    assert torch.allclose(best, ref_best, rtol=0, atol=1e-3)


def gradients(run, scores):
    """log Z of `run` and its gradient to the emissions, the dense matrix,
    start and end (with random weights per sequence)."""
    leaves = [
        x.detach().clone().requires_grad_(True)
        for x in (scores.emissions, scores.transitions, scores.start, scores.end)
    ]
    batch = scores._replace(emissions=leaves[0], transitions=leaves[1], start=leaves[2], end=leaves[3])
    log_z = run(batch)
    weights = torch.linspace(0.5, 1.5, log_z.shape[0], device=log_z.device)
    (log_z * weights).sum().backward()
    return [log_z.detach().cpu()] + [(x.grad if x.grad is not None else torch.zeros_like(x)).cpu() for x in leaves]


def assert_as_close_as_the_torch_code(got, scores, reference):
    """float32 results over long sequences: the kernels' distance from
    float64 torch code is at most a few times the float32 torch code's own
    (marginals of 60 tokens: both about 1e-4 from float64)."""
    exact = reference(
        scores._replace(**{n: getattr(scores, n).double() for n in ("emissions", "transitions", "start", "end")})
    )
    exact = exact.cpu()
    ours = (got.double().cpu() - exact).abs().max().item()
    torch32 = (reference(scores).double().cpu() - exact).abs().max().item()
    assert ours <= 4 * torch32 + 1e-6, (ours, torch32)


def test_long_sequences_round_like_the_torch_code():
    scores = many_labels(1, [60, 0, 45, 30], 300, 17)
    assert_as_close_as_the_torch_code(triton_factored.marginals(on_device(scores)), scores, factored.marginals)
    assert_as_close_as_the_torch_code(
        triton_factored.log_partition(on_device(scores)).detach(), scores, factored.log_partition
    )


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_log_partition_and_its_gradient_equal_the_torch_code(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes, dtype=torch.float32)
    got = gradients(triton_factored.log_partition, on_device(scores))
    want = gradients(
        factored.log_partition,
        scores._replace(**{n: getattr(scores, n).double() for n in ("emissions", "transitions", "start", "end")}),
    )
    for g, w in zip(got, want):
        assert torch.allclose(g.double(), w, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("K,C,lengths", [(300, 17, [7, 0, 1, 4]), (513, 5, [3, 6])])
def test_log_partition_marginals_and_nll_with_more_labels_than_a_block(K, C, lengths):
    scores = many_labels(K + C, lengths, K, C)
    got = gradients(triton_factored.log_partition, on_device(scores))
    want = gradients(factored.log_partition, scores)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, atol=1e-4, rtol=1e-4)
    probs = triton_factored.marginals(on_device(scores)).cpu()
    assert_as_close_as_the_torch_code(probs, scores, factored.marginals)
    assert torch.allclose(probs.sum(-1), scores.mask.float(), atol=1e-4)
    gen = torch.Generator().manual_seed(K)
    allowed = torch.rand(scores.emissions.shape, generator=gen) < 0.3
    allowed[..., 0] = True
    mode = "auto" if DEVICE == "cuda" else "triton"
    nll = dispatch.negative_log_likelihood(on_device(scores), allowed.to(DEVICE), kernels=mode).cpu()
    assert torch.allclose(nll, dispatch.negative_log_likelihood(scores, allowed, kernels="torch"), atol=1e-3)


def test_dispatch_sends_factored_log_z_and_marginals_to_the_kernels(monkeypatch):
    scores = on_device(many_labels(6, [4, 2], 200, 6))
    mode = "auto" if DEVICE == "cuda" else "triton"
    called = []
    for name in ("log_partition", "marginals"):
        original = getattr(triton_factored, name)
        monkeypatch.setattr(triton_factored, name, lambda s, _f=original, _n=name: called.append(_n) or _f(s))
    dispatch.log_partition(scores, kernels=mode)
    dispatch.marginals(scores, kernels=mode)
    dispatch.log_partition(scores, kernels="torch")
    assert called == ["log_partition", "marginals"]


@pytest.mark.gpu
def test_cuda_log_partition_at_a_morphological_taggers_shape():
    """981 labels in 17 classes on the GPU: log Z, its gradient and the
    marginals of the kernels against the torch code."""
    gen = torch.Generator().manual_seed(1)
    lengths = torch.randint(1, 61, (64,), generator=gen).tolist()
    lengths[:2] = [60, 0]
    scores = on_device(many_labels(1, lengths, 981, 17))
    got = gradients(lambda s: dispatch.log_partition(s, kernels="auto"), scores)
    want = gradients(factored.log_partition, scores)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, atol=1e-3, rtol=1e-4)
    assert_as_close_as_the_torch_code(dispatch.marginals(scores, kernels="auto").cpu(), scores, factored.marginals)
