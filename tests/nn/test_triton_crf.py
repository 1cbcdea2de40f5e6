"""The fused Triton CRF kernels against the torch reference and brute force.

Without CUDA the kernels run on CPU tensors through Triton's interpreter,
which must be on before Triton is first imported (it reads TRITON_INTERPRET
when it decorates a function, its own library's included): tests/conftest.py
sets it, and so does this module for a run of its own. With CUDA they compile
and run on the GPU, and the `gpu` tests compare them with the torch code at
the benchmark's shapes. The kernels run through spacy_crf.nn's functions with
kernels="triton" (on CPU tensors too); the reference is spacy_crf.nn.crf.
"""

import os
import subprocess
import sys

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

triton = pytest.importorskip("triton", minversion="3.0")

from spacy_crf.nn import (  # noqa: E402
    NEG_INF,
    CRFScores,
    allowed_from_tags,
    crf,  # noqa: E402
    log_partition,
    marginals,
    negative_log_likelihood,
    viterbi_decode,
)
from spacy_crf.nn.kernels import dispatch, triton_crf  # noqa: E402

from ..helpers import no_host_sync  # noqa: E402
from .test_crf import all_paths, brute_score  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu" and not triton_crf.INTERPRETED:
    pytest.skip(
        "no CUDA, and Triton was imported without its interpreter "
        "(TRITON_INTERPRET=1 must be set before Triton is first imported)",
        allow_module_level=True,
    )


def random_scores(seed, lengths, K, *, T=None, constrained=False, dtype=torch.float32):
    """A padded batch; with `constrained`, about a third of the transitions
    and some start and end labels are NEG_INF, but staying on label 0 is
    always allowed, so every sequence has a path."""
    gen = torch.Generator().manual_seed(seed)
    B, T = len(lengths), T if T is not None else max(max(lengths, default=0), 1)
    lengths_t = torch.tensor(lengths, dtype=torch.long).reshape(B)
    emissions = torch.randn(B, T, K, generator=gen) * 2
    transitions = torch.randn(K, K, generator=gen)
    start, end = torch.randn(K, generator=gen), torch.randn(K, generator=gen)
    if constrained:
        forbid = torch.rand(K, K, generator=gen) < 0.35
        forbid.fill_diagonal_(False)
        transitions = transitions.masked_fill(forbid, NEG_INF)
        start = start.masked_fill(torch.rand(K, generator=gen) < 0.3, NEG_INF)
        end = end.masked_fill(torch.rand(K, generator=gen) < 0.3, NEG_INF)
        start[0] = end[0] = 0.5
    return CRFScores(
        emissions.to(dtype),
        torch.arange(T) < lengths_t[:, None],
        transitions.to(dtype),
        start.to(dtype),
        end.to(dtype),
    )


def to(scores, device=DEVICE, dtype=None):
    return CRFScores(*(x.to(device) if x.dtype == torch.bool else x.to(device, dtype or x.dtype) for x in scores[:5]))


def partial_labels(seed, scores):
    """A gold path that the constraints allow (the torch Viterbi path of other
    emissions), half its tokens unknown, half of those with one excluded label."""
    gen = torch.Generator().manual_seed(seed)
    emissions, mask, transitions, start, end = scores[:5]
    B, T, K = emissions.shape
    noise = CRFScores(
        torch.randn(B, T, K, generator=gen, dtype=torch.float64),
        mask,
        transitions.double(),
        start.double(),
        end.double(),
    )
    tags, _ = crf.viterbi_decode(to(noise, "cpu"))
    unknown = torch.rand(B, T, generator=gen) < 0.5
    excluded = (tags + 1 + torch.randint(max(K - 1, 1), (B, T), generator=gen)) % K
    excluded = excluded.masked_fill(~unknown | (torch.rand(B, T, generator=gen) < 0.5) | (excluded == tags), -1)
    return allowed_from_tags(tags.masked_fill(unknown, -1), K, excluded=excluded)


def reference(scores, allowed, weights):
    """Float64 torch results for float32 inputs: NLL, its gradients, log Z, marginals."""
    leaves = [x.detach().cpu().double().requires_grad_(True) for x in (scores[0], *scores[2:5])]
    exact = CRFScores(leaves[0], scores.mask.cpu(), *leaves[1:])
    nll = crf.negative_log_likelihood(exact, allowed.cpu())
    grads = torch.autograd.grad((nll * weights.double()).sum(), leaves)
    return nll.detach(), grads, crf.log_partition(exact).detach(), crf.marginals(exact)


def kernel_results(scores, allowed, weights):
    leaves = [x.detach().to(DEVICE).requires_grad_(True) for x in (scores[0], *scores[2:5])]
    kernel = CRFScores(leaves[0], scores.mask.to(DEVICE), *leaves[1:])
    assert dispatch.use_kernels(kernel.emissions, kernels="triton")
    nll = negative_log_likelihood(kernel, allowed.to(DEVICE), kernels="triton")
    grads = torch.autograd.grad((nll * weights.to(DEVICE)).sum(), leaves)
    return (
        nll.detach().cpu(),
        [g.cpu() for g in grads],
        log_partition(kernel, kernels="triton").detach().cpu(),
        marginals(kernel, kernels="triton").cpu(),
    )


def assert_close(got, expected, *, scale=1.0, rtol=2e-6, atol=0.0):
    """Equal within float32 rounding: rtol of the largest magnitude in play,
    times `scale` (the number of float32 steps summed into each value), or
    within `atol` if that is larger."""
    assert got.shape == expected.shape
    if not got.numel():
        return
    tol = max(rtol * scale * (1.0 + float(expected.abs().max())), atol)
    error = float((got.double() - expected.double()).abs().max())
    assert error <= tol, f"max error {error:.3g} > {tol:.3g}"


@pytest.mark.parametrize(
    "seed,lengths,K",
    [
        (0, [1], 1),
        (1, [1], 3),
        (2, [5], 2),
        (3, [3, 1, 5, 2], 3),
        (4, [4, 0, 3, 2, 1], 3),
        (5, [5, 4], 4),
        (6, [0, 0], 2),
    ],
)
@pytest.mark.parametrize("constrained", [False, True])
def test_kernels_equal_brute_force(seed, lengths, K, constrained):
    scores = random_scores(seed, lengths, K, constrained=constrained)
    allowed = partial_labels(seed, scores)
    exact = to(scores, "cpu", torch.float64)
    paths, best = viterbi_decode(to(scores), kernels="triton")
    nll = negative_log_likelihood(to(scores), allowed.to(DEVICE), kernels="triton").cpu()
    log_z = log_partition(to(scores), kernels="triton").cpu()
    for b, length in enumerate(lengths):
        if length == 0:
            assert best[b] == 0 and log_z[b] == 0 and nll[b] == 0
            continue
        values = {path: brute_score(exact, b, path) for path in all_paths(length, K)}
        top = max(values.values())
        assert brute_score(exact, b, paths[b, :length].tolist()) == pytest.approx(top, abs=1e-4)
        assert float(best[b]) == pytest.approx(top, abs=1e-4)
        assert set(paths[b, length - 1 :].tolist()) == {int(paths[b, length - 1])}
        feasible = torch.tensor([v for v in values.values() if v > NEG_INF / 2], dtype=torch.float64)
        assert float(log_z[b]) == pytest.approx(float(torch.logsumexp(feasible, 0)), abs=1e-4)
        gold = torch.tensor(
            [v for p, v in values.items() if v > NEG_INF / 2 and all(allowed[b, t, y] for t, y in enumerate(p))],
            dtype=torch.float64,
        )
        expected = float(torch.logsumexp(feasible, 0) - torch.logsumexp(gold, 0))
        assert float(nll[b]) == pytest.approx(expected, abs=1e-4)


SHAPES = [  # (K, B, T): small batches and short sequences for large K (interpreter)
    (1, 6, 9),
    (2, 7, 12),
    (3, 7, 12),
    (7, 6, 12),
    (18, 6, 10),
    (50, 4, 7),
    (70, 4, 6),
]


def mixed_lengths(seed, B, T):
    """Lengths 0..T, with 0, 1 and T always among them."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, T + 1, (B,), generator=gen).tolist()
    lengths[:3] = [T, 0, 1]
    return lengths


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("K,B,T", SHAPES)
def test_kernels_equal_the_float64_reference(K, B, T, constrained):
    """Same paths and scores as the torch float32 Viterbi (bit for bit); NLL
    with partial labels, its gradients, log Z and marginals within float32
    rounding of the float64 torch results; lengths 0..T mixed."""
    seed = 100 * K + T + constrained
    scores = random_scores(seed, mixed_lengths(seed, B, T), K, T=T, constrained=constrained)
    paths, best = viterbi_decode(to(scores), kernels="triton")
    torch_paths, torch_best = crf.viterbi_decode(scores)
    assert paths.dtype == torch.long and best.dtype == torch.float32
    assert torch.equal(paths.cpu(), torch_paths)
    assert torch.equal(best.cpu(), torch_best)

    allowed = partial_labels(seed, scores)
    weights = torch.rand(B, generator=torch.Generator().manual_seed(seed)) + 0.5
    nll, grads, log_z, probs = kernel_results(scores, allowed, weights)
    ref_nll, ref_grads, ref_log_z, ref_probs = reference(scores, allowed, weights)
    assert_close(log_z, ref_log_z, scale=T)
    assert_close(nll, ref_nll, scale=T)
    for got, expected in zip(grads, ref_grads):
        # the gradients sum expected counts over the batch
        assert got.dtype == torch.float32
        assert_close(got, expected, scale=B * T)
    assert_close(probs, ref_probs, scale=T)
    assert torch.all(probs.cpu()[~scores.mask] == 0)


def test_viterbi_breaks_ties_as_the_torch_code():
    """Integer scores tie many paths: the kernel still picks the torch path's
    (the lowest label wins each max)."""
    for trial, K in enumerate([2, 3, 5, 9]):
        scores = random_scores(trial, mixed_lengths(trial, 8, 9), K, T=9)
        scores = CRFScores(*(x.round() if x.is_floating_point() else x for x in scores[:5]))
        paths, best = viterbi_decode(to(scores), kernels="triton")
        torch_paths, torch_best = crf.viterbi_decode(scores)
        assert torch.equal(paths.cpu(), torch_paths) and torch.equal(best.cpu(), torch_best)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_emissions_are_computed_in_float32(dtype):
    scores = random_scores(7, [5, 0, 3, 1], 6, constrained=True)
    scores = CRFScores(scores.emissions.to(dtype), *scores[1:])
    paths, best = viterbi_decode(to(scores), kernels="triton")
    torch_paths, torch_best = crf.viterbi_decode(scores)
    assert torch.equal(paths.cpu(), torch_paths) and torch.equal(best.cpu(), torch_best)
    allowed = partial_labels(7, scores)
    weights = torch.ones(4)
    nll, grads, log_z, probs = kernel_results(scores, allowed, weights)
    assert nll.dtype == log_z.dtype == probs.dtype == torch.float32
    assert [g.dtype for g in grads] == [dtype] + [torch.float32] * 3
    ref_nll, ref_grads, ref_log_z, ref_probs = reference(scores, allowed, weights)
    assert_close(log_z, ref_log_z, scale=5)
    assert_close(nll, ref_nll, scale=5)
    assert_close(probs, ref_probs, scale=5)
    for got, expected in zip(grads, ref_grads):  # rounded to the input dtype
        assert_close(got, expected, rtol=torch.finfo(dtype).eps)


def test_empty_batches():
    """All sequences empty (the kernels), and a time axis or a batch of 0 (the
    torch code: nothing to launch)."""
    for lengths, T in [([0, 0, 0], 4), ([0, 0], 0), ([], 3)]:
        scores = to(random_scores(1, lengths, 5, T=T))
        B = len(lengths)
        paths, best = viterbi_decode(scores, kernels="triton")
        assert paths.shape == (B, T) and torch.equal(best.cpu(), torch.zeros(B))
        assert torch.equal(paths.cpu(), crf.viterbi_decode(scores)[0].cpu())
        assert torch.equal(log_partition(scores, kernels="triton").cpu(), torch.zeros(B))
    scores = to(random_scores(1, [0, 0, 0], 5, T=4))
    emissions = scores.emissions.clone().requires_grad_(True)
    nll = negative_log_likelihood(
        CRFScores(emissions, *scores[1:]), torch.ones_like(emissions, dtype=torch.bool), kernels="triton"
    )
    assert torch.equal(nll.cpu(), torch.zeros(3))
    nll.sum().backward()
    assert torch.all(emissions.grad == 0)
    assert torch.equal(marginals(scores, kernels="triton").cpu(), torch.zeros(3, 4, 5))


def test_launchers_check_shapes():
    scores = to(random_scores(0, [2, 1], 3))
    emissions, mask, transitions, start, end = scores[:5]
    lengths = mask.sum(1, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"lengths must be int32 of shape \(2,\)"):
        triton_crf.viterbi(emissions, mask.sum(1), transitions, start, end)
    with pytest.raises(ValueError, match=r"transitions must be \(3, 3\)"):
        triton_crf.forward(emissions, lengths, transitions[:2], start, end)
    with pytest.raises(ValueError, match=r"start and end must be \(3,\)"):
        triton_crf.forward(emissions, lengths, transitions, start[:2], end)
    with pytest.raises(ValueError, match=r"allowed must be bool \(2, 2, 3\)"):
        triton_crf.forward(emissions, lengths, transitions, start, end, allowed=torch.ones_like(emissions))
    with pytest.raises(ValueError, match=r"the kernels take 1 to 128 labels, got K=129"):
        wide = emissions.new_zeros(129)
        triton_crf.viterbi(wide.expand(2, 2, 129), lengths, wide.expand(129, 129), wide, wide)
    with pytest.raises(ValueError, match=r"emissions must be float16, bfloat16 or float32, got torch.float64"):
        triton_crf.viterbi(emissions.double(), lengths, transitions, start, end)


def test_the_switch_picks_kernels_or_torch():
    cpu = torch.zeros(2, 3, 4)
    assert not dispatch.use_kernels(cpu, kernels="torch")
    assert not dispatch.use_kernels(cpu, kernels="auto")  # CPU tensors run the torch code by default
    assert dispatch.use_kernels(cpu, kernels="triton") == (DEVICE == "cpu")  # the interpreter is on without CUDA
    for unsupported in (
        cpu.double(),
        torch.zeros(2, 3, 129),
        torch.zeros(2, 0, 4),
        torch.zeros(0, 3, 4),
        torch.zeros(2, 3, 4, device="meta"),
    ):
        assert not dispatch.use_kernels(unsupported, kernels="triton")
    scores = CRFScores(cpu, torch.ones(2, 3, dtype=torch.bool), torch.zeros(4, 4), torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match=r"kernels must be one of auto, torch, triton, numba, got 'cuda'"):
        log_partition(scores, kernels="cuda")


def test_the_environment_variable_is_the_default(monkeypatch):
    """kernels=None reads SPACY_CRF_KERNELS at every call, "auto" when unset."""
    scores = to(random_scores(2, [3, 1], 4))
    calls = []
    monkeypatch.setattr(triton_crf, "viterbi_decode", lambda s: calls.append(s) or crf.viterbi_decode(s))
    monkeypatch.delenv("SPACY_CRF_KERNELS", raising=False)
    assert dispatch.kernel_mode() == "auto"
    monkeypatch.setenv("SPACY_CRF_KERNELS", "torch")
    viterbi_decode(scores)
    assert not calls
    monkeypatch.setenv("SPACY_CRF_KERNELS", "triton")
    viterbi_decode(scores)
    assert len(calls) == 1
    viterbi_decode(scores, kernels="torch")  # the argument wins
    assert len(calls) == 1
    monkeypatch.setenv("SPACY_CRF_KERNELS", "cuda")
    with pytest.raises(ValueError, match=r"SPACY_CRF_KERNELS must be one of auto, torch, triton, numba, got 'cuda'"):
        viterbi_decode(scores)


def test_the_dispatch_knows_the_kernels_label_limit():
    assert dispatch.KERNEL_MAX_LABELS == triton_crf.MAX_LABELS
    assert dispatch.use_kernels(torch.zeros(1, 1, triton_crf.MAX_LABELS, device=DEVICE), kernels="triton")
    assert not dispatch.use_kernels(torch.zeros(1, 1, triton_crf.MAX_LABELS + 1, device=DEVICE), kernels="triton")


def test_float64_and_many_labels_fall_back_to_torch():
    """Shapes the kernels do not cover give the torch results under the switch."""
    for scores in (random_scores(3, [3, 1], 4, dtype=torch.float64), random_scores(3, [2, 1], 130, T=2)):
        scores = to(scores)
        assert not dispatch.use_kernels(scores.emissions, kernels="triton")
        assert torch.equal(log_partition(scores, kernels="triton"), crf.log_partition(scores))
        assert torch.equal(viterbi_decode(scores, kernels="triton")[0], crf.viterbi_decode(scores)[0])


# Compiles every kernel for sm_90, in a process of its own: where Triton was
# imported under the interpreter, its own library functions are interpreted
# ones and cannot be compiled.
_COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from spacy_crf.nn.kernels import triton_crf

SIGNATURES = {
    "_viterbi_kernel": "*fp32 i32 i32 i32 *i32 *fp32 *fp32 *fp32 *i8 *i64 *fp32 i32 i32",
    "_forward_kernel": "*bf16 i32 i32 i32 *u8 i32 i32 i32 *i32 *fp32 *fp32 *fp32 *fp32 *fp32 i32 i32",
    "_backward_kernel": "*fp16 i32 i32 i32 *u8 i32 i32 i32 *i32 *fp32 *fp32 *fp32 *fp32 *fp32 *fp16"
    + " *fp32 *fp32 *fp32 i32 i32",
}
for block_k in (2, 32, 128):
    for name, types in SIGNATURES.items():
        fn = getattr(triton_crf, name)
        params = [p.name for p in fn.params]
        constexprs = {"BLOCK_K": block_k, "BLOCK_T": 32, "HAS_ALLOWED": True, "NEED_TRANSITIONS": True}
        constexprs = {k: v for k, v in constexprs.items() if k in params}
        types = iter(types.split())
        signature = {p: "constexpr" if p in constexprs else next(types) for p in params}
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": triton_crf._NUM_WARPS[name.split("_")[1]][block_k], "enable_fp_fusion": True},
        )
        assert compiled.asm["cubin"], name
        print(name, block_k, "ok")
"""


@pytest.mark.skipif(DEVICE == "cuda", reason="the GPU tests compile and run the kernels")
def test_kernels_compile_for_hopper():
    """The kernels lower to sm_90 machine code, which the interpreter never
    checks: Triton's compiler and ptxas run here, no GPU needed."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _COMPILE], env=env, capture_output=True, text=True)
    if done.returncode and ("ptxas" in done.stderr or "backend" in done.stderr):
        pytest.skip(f"Triton cannot compile for CUDA here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(" ok") == 9


@pytest.mark.gpu
@pytest.mark.parametrize("B,T,K", [(256, 40, 18), (256, 40, 50), (1024, 60, 50), (16, 512, 20), (64, 30, 128)])
def test_cuda_kernels_equal_the_torch_path(B, T, K):
    """At the benchmark's shapes on the GPU: the kernels (the default for CUDA)
    give the torch path's Viterbi and, within float32 rounding, its float64
    NLL and gradients; no host synchronisation."""
    gen = torch.Generator().manual_seed(B + T + K)
    lengths = torch.randint(0, T + 1, (B,), generator=gen).tolist()
    lengths[:2] = [T, 0]
    scores = random_scores(K, lengths, K, T=T, constrained=True)
    cuda = to(scores, "cuda")
    assert dispatch.use_kernels(cuda.emissions, kernels="auto")
    allowed = partial_labels(K, scores)
    allowed_cuda = allowed.cuda()
    with no_host_sync():
        paths, best = viterbi_decode(cuda, kernels="auto")
        emissions = cuda.emissions.clone().requires_grad_(True)
        nll = negative_log_likelihood(CRFScores(emissions, *cuda[1:]), allowed_cuda, kernels="auto")
        nll.sum().backward()
    torch_paths, torch_best = crf.viterbi_decode(cuda, compact=False)
    assert torch.equal(paths, torch_paths)
    assert torch.equal(best, torch_best)
    exact = to(scores, "cpu", torch.float64)
    ref_emissions = exact.emissions.clone().requires_grad_(True)
    ref_nll = crf.negative_log_likelihood(CRFScores(ref_emissions, *exact[1:]), allowed)
    ref_nll.sum().backward()
    # float32 rounding over long sequences: also the torch code's own error
    # in float32 on the same batch (at T = 512 both are about 0.01)
    f32_emissions = cuda.emissions.clone().requires_grad_(True)
    f32_nll = crf.negative_log_likelihood(CRFScores(f32_emissions, *cuda[1:]), allowed_cuda)
    f32_nll.sum().backward()
    for got, f32, expected in [(nll, f32_nll, ref_nll), (emissions.grad, f32_emissions.grad, ref_emissions.grad)]:
        f32_error = float((f32.detach().cpu().double() - expected.detach()).abs().max())
        assert_close(got.detach().cpu(), expected.detach(), scale=T, atol=2 * f32_error)


def test_unspecialised_arguments_are_named_in_every_kernel():
    """Triton ignores unknown names in do_not_specialize: check them."""
    import inspect

    for kernel, names in [
        (triton_crf._viterbi_kernel, triton_crf._PER_BATCH),
        (triton_crf._forward_kernel, triton_crf._PER_BATCH_ALLOWED),
        (triton_crf._backward_kernel, triton_crf._PER_BATCH_ALLOWED),
    ]:
        assert set(names) <= set(inspect.signature(kernel.fn).parameters), kernel.fn.__name__
