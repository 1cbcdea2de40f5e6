"""Fused Triton kernels for the linear-chain CRF: Viterbi, log Z and its gradient.

Each kernel runs a whole padded batch in one launch, one program per
sequence: the program holds its K scores and the (K, K) transition tile on
chip and loops over its own sequence's length, so a launch costs what the
real tokens cost and not one launch per time step. The maths is the torch
code's in crf.py (the reference these kernels are tested against, and the
fallback for everything they do not cover); `dispatch.py` picks between them.

    emissions   # shape: (B, T, K)  float16, bfloat16 or float32 (any strides)
    lengths     # shape: (B,)       int32, the mask's row sums (masks are left-aligned)
    transitions # shape: (K, K)     transitions[i, j] scores label i -> label j
    start, end  # shape: (K,)

Scores are computed in float32 whatever the input dtype. NEG_INF (-1e9) stands
in for log 0 exactly as in crf.py, so forbidden transitions cost nothing
extra. The forward algorithm rescales like crf.py's `_logmatmul`: a step is
log(exp(alpha - max alpha) @ exp(transitions - max transitions)), a (K, K)
multiply-add instead of K * K exponentials.

Two layers: the launchers `viterbi`, `forward` and `backward` take the
lengths and run one kernel each; `log_partition` (an autograd Function over
`forward` and `backward`), `negative_log_likelihood`, `viterbi_decode` and
`marginals` take a CRFScores batch as crf.py's functions of the same names do.

When Triton's interpreter is on (TRITON_INTERPRET=1 when this module is first
imported) the same kernels run on CPU tensors, which is how CI tests them.
"""

from typing import Optional, Tuple

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction

from ..crf import NEG_INF as _NEG_INF_VALUE
from ..crf import CRFScores, check_allowed, check_scores

# The largest label count the kernels take: their (K, K) tiles live in
# registers, and at BLOCK_K = 256 the backward's two tiles would not fit.
MAX_LABELS = 128

_NEG_INF = tl.constexpr(_NEG_INF_VALUE)
# torch.finfo(torch.float32).tiny: the floor crf.py's _logmatmul clamps to.
_TINY = tl.constexpr(1.1754943508222875e-38)


@triton.jit
def _emissions_at(em, ok, t, k, present, s_et, s_ek, s_ot, s_ok, other, HAS_ALLOWED: tl.constexpr):
    """Step t's emissions in float32 (`other` in lanes not present); with an
    allowed mask, NEG_INF for the labels it does not allow."""
    emit = tl.load(em + t * s_et + k * s_ek, mask=present, other=other).to(tl.float32)
    if HAS_ALLOWED:
        emit = tl.where(tl.load(ok + t * s_ot + k * s_ok, mask=present, other=0) != 0, emit, _NEG_INF)
    return emit


@triton.jit
def _exp_transitions(trans_ptr, k, valid, K):
    """The (K, K) transitions as exp(trans - shift), 0 outside K, and the shift."""
    tile = valid[:, None] & valid[None, :]
    trans = tl.load(trans_ptr + k[:, None] * K + k[None, :], mask=tile, other=float("-inf")).to(tl.float32)
    shift = tl.max(tl.max(trans, axis=1), axis=0)
    return shift, tl.where(tile, tl.exp(trans - shift), 0.0)


@triton.jit
def _store_last_label(path, label, n, T, BLOCK_T: tl.constexpr):
    """The last real step's label at steps n - 1 to T - 1 of a path: padded
    steps repeat the last real label."""
    for t0 in range(n - 1, T, BLOCK_T):
        steps = t0 + tl.arange(0, BLOCK_T)
        tl.store(path + steps, tl.full((BLOCK_T,), 0, tl.int64) + label, mask=steps < T)


# Arguments that change with every batch's longest sequence are not
# specialised on (Triton would compile a variant per divisibility class).
_PER_BATCH = ["s_eb", "T"]
_PER_BATCH_ALLOWED = ["s_eb", "s_ob", "T"]


@triton.jit(do_not_specialize=_PER_BATCH)
def _viterbi_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    len_ptr,
    trans_ptr,
    start_ptr,
    end_ptr,
    bp_ptr,
    path_ptr,
    score_ptr,
    T,
    K,
    BLOCK_K: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    # An empty sequence still decodes its first step, as the torch code does
    # (its padded path is that label), but scores 0.
    n = tl.maximum(length, 1)
    k = tl.arange(0, BLOCK_K)
    valid = k < K
    tile = valid[:, None] & valid[None, :]
    trans = tl.load(trans_ptr + k[:, None] * K + k[None, :], mask=tile, other=float("-inf")).to(tl.float32)
    em = em_ptr + b * s_eb
    score = tl.load(start_ptr + k, mask=valid, other=float("-inf")).to(tl.float32)
    score = score + _emissions_at(em, em, 0, k, valid, s_et, s_ek, 0, 0, float("-inf"), False)
    bp = bp_ptr + b * T * K  # bp[t, j]: the best label before label j at step t
    # each step loads the next step's emissions, so that their latency
    # overlaps a step's work
    upcoming = _emissions_at(em, em, 1, k, k < tl.where(1 < n, K, 0), s_et, s_ek, 0, 0, float("-inf"), False)
    for t in range(1, n):
        emit = upcoming
        upcoming = _emissions_at(
            em, em, t + 1, k, k < tl.where(t + 1 < n, K, 0), s_et, s_ek, 0, 0, float("-inf"), False
        )
        # shape: (K_prev, K_next); ties go to the lowest label, as torch's argmax
        best, arg = tl.max(score[:, None] + trans, axis=0, return_indices=True, return_indices_tie_break_left=True)
        tl.store(bp + t * K + k, arg.to(bp_ptr.dtype.element_ty), mask=valid)
        score = best + emit
    last = score + tl.load(end_ptr + k, mask=valid, other=float("-inf")).to(tl.float32)
    best_score, label = tl.max(last, axis=0, return_indices=True, return_indices_tie_break_left=True)
    tl.store(score_ptr + b, tl.where(length > 0, best_score, 0.0))
    path = path_ptr + b * T
    _store_last_label(path, label, n, T, BLOCK_T)
    tl.debug_barrier()  # the backpointers other threads stored are visible
    for u in range(1, n):
        t = n - u
        label = tl.load(bp + t * K + label).to(tl.int32)
        tl.store(path + t - 1, label.to(tl.int64))


@triton.jit(do_not_specialize=_PER_BATCH_ALLOWED)
def _forward_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    ok_ptr,
    s_ob,
    s_ot,
    s_ok,
    len_ptr,
    trans_ptr,
    start_ptr,
    end_ptr,
    alpha_ptr,
    logz_ptr,
    T,
    K,
    HAS_ALLOWED: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    k = tl.arange(0, BLOCK_K)
    valid = k < K
    shift, exp_trans = _exp_transitions(trans_ptr, k, valid, K)  # shape: (K_prev, K_next)
    em = em_ptr + b * s_eb
    ok = ok_ptr + b * s_ob
    alphas = alpha_ptr + b * T * K
    emit = _emissions_at(em, ok, 0, k, valid, s_et, s_ek, s_ot, s_ok, 0.0, HAS_ALLOWED)
    alpha = tl.load(start_ptr + k, mask=valid, other=0.0).to(tl.float32) + emit
    alpha = tl.where(valid, alpha, float("-inf"))
    tl.store(alphas + k, alpha, mask=k < tl.minimum(length, 1) * K)
    upcoming = _emissions_at(em, ok, 1, k, k < tl.where(1 < length, K, 0), s_et, s_ek, s_ot, s_ok, 0.0, HAS_ALLOWED)
    for t in range(1, length):
        emit = upcoming
        upcoming = _emissions_at(
            em, ok, t + 1, k, k < tl.where(t + 1 < length, K, 0), s_et, s_ek, s_ot, s_ok, 0.0, HAS_ALLOWED
        )
        top = tl.max(alpha, axis=0)
        summed = tl.sum(tl.exp(alpha - top)[:, None] * exp_trans, axis=0)
        alpha = tl.log(tl.maximum(summed, _TINY)) + (top + shift) + emit
        alpha = tl.where(valid, alpha, float("-inf"))
        tl.store(alphas + t * K + k, alpha, mask=valid)
    last = alpha + tl.load(end_ptr + k, mask=valid, other=0.0).to(tl.float32)
    top = tl.max(last, axis=0)
    log_z = top + tl.log(tl.sum(tl.exp(last - top), axis=0))
    tl.store(logz_ptr + b, tl.where(length > 0, log_z, 0.0))


@triton.jit(do_not_specialize=_PER_BATCH_ALLOWED)
def _backward_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    ok_ptr,
    s_ob,
    s_ot,
    s_ok,
    len_ptr,
    trans_ptr,
    end_ptr,
    alpha_ptr,
    logz_ptr,
    g_ptr,
    gem_ptr,
    gtrans_ptr,
    gstart_ptr,
    gend_ptr,
    T,
    K,
    HAS_ALLOWED: tl.constexpr,
    NEED_TRANSITIONS: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    g = tl.load(g_ptr + b)
    log_z = tl.load(logz_ptr + b)
    k = tl.arange(0, BLOCK_K)
    valid = k < K
    tile = valid[:, None] & valid[None, :]
    shift, exp_trans = _exp_transitions(trans_ptr, k, valid, K)  # shape: (K_prev, K_next)
    em = em_ptr + b * s_eb
    ok = ok_ptr + b * s_ob
    alphas = alpha_ptr + b * T * K
    gem = gem_ptr + b * T * K
    # beta_t(i): log-sum of the scores of every continuation after label i at
    # step t. The marginal of step t is exp(alpha_t + beta_t - log Z); it is
    # exactly 0 where a label is not allowed (its alpha holds NEG_INF).
    beta = tl.load(end_ptr + k, mask=valid, other=float("-inf")).to(tl.float32)
    beta = tl.where(valid, beta, float("-inf"))
    alpha = tl.load(alphas + (length - 1) * K + k, mask=k < tl.minimum(length, 1) * K, other=float("-inf"))
    marginal = tl.exp(alpha + beta - log_z)
    tl.store(gend_ptr + b * K + k, marginal * g, mask=valid)
    counts = tl.zeros((BLOCK_K, BLOCK_K), dtype=tl.float32)
    # the loop walks t = length - 1 .. 1, each step loading the next one's inputs
    emit_next = _emissions_at(
        em, ok, length - 1, k, k < tl.where(length > 1, K, 0), s_et, s_ek, s_ot, s_ok, 0.0, HAS_ALLOWED
    )
    before_next = tl.load(alphas + (length - 2) * K + k, mask=k < tl.where(length > 1, K, 0), other=float("-inf"))
    for u in range(1, length):
        t = length - u
        emit = emit_next
        before = before_next  # alpha_{t-1}
        emit_next = _emissions_at(em, ok, t - 1, k, k < tl.where(t > 1, K, 0), s_et, s_ek, s_ot, s_ok, 0.0, HAS_ALLOWED)
        before_next = tl.load(alphas + (t - 2) * K + k, mask=k < tl.where(t > 1, K, 0), other=float("-inf"))
        tl.store(gem + t * K + k, marginal * g, mask=valid)
        after = tl.where(valid, emit + beta, float("-inf"))
        top_after = tl.max(after, axis=0)
        right = tl.exp(after - top_after)  # shape: (K_next,)
        if NEED_TRANSITIONS:
            # expected counts of i -> j at step t: exp(alpha_{t-1}(i) + trans(i, j)
            # + emit_t(j) + beta_t(j) - log Z), rescaled as in crf.py
            top_before = tl.max(before, axis=0)
            weight = tl.exp(top_before + top_after + shift - log_z) * g
            left = tl.exp(before - top_before) * weight  # shape: (K_prev,)
            counts += left[:, None] * right[None, :]
        summed = tl.sum(exp_trans * right[None, :], axis=1)
        beta = tl.log(tl.maximum(summed, _TINY)) + (top_after + shift)
        beta = tl.where(valid, beta, float("-inf"))
        marginal = tl.exp(before + beta - log_z)
    # step 0 (if the sequence has one): its marginal is also the start's gradient
    tl.store(gem + k, marginal * g, mask=k < tl.minimum(length, 1) * K)
    tl.store(gstart_ptr + b * K + k, tl.where(length > 0, marginal * g, 0.0), mask=valid)
    zeros = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for t in range(length, T):  # padded steps have no gradient
        tl.store(gem + t * K + k, zeros, mask=valid)
    if NEED_TRANSITIONS:
        tl.store(
            gtrans_ptr + b * K * K + k[:, None] * K + k[None, :],
            exp_trans * counts,
            mask=tile,
        )


# True when the kernels, and the Triton library functions they call, run in
# Triton's CPU interpreter: TRITON_INTERPRET=1 before Triton was first imported.
INTERPRETED: bool = isinstance(_viterbi_kernel, InterpretedFunction) and isinstance(
    tl.standard.max, InterpretedFunction
)


def _block_k(n_labels: int) -> int:
    return max(triton.next_power_of_2(n_labels), 2)


# Warps per sequence, by kernel and BLOCK_K: the fewest with which ptxas
# (CUDA 13.4, sm_90a) keeps the (K, K) tiles in registers without spilling
# (one warp: reductions stay within the warp). Only the backward at
# BLOCK_K = 128, with two tiles, spills (about 1.5 KB a thread at 8 warps,
# more at 4 or 16).
_NUM_WARPS = {
    "viterbi": {2: 1, 4: 1, 8: 1, 16: 1, 32: 1, 64: 2, 128: 4},
    "forward": {2: 1, 4: 1, 8: 1, 16: 1, 32: 1, 64: 2, 128: 8},
    "backward": {2: 1, 4: 1, 8: 1, 16: 1, 32: 1, 64: 8, 128: 8},
}


def _check(emissions: torch.Tensor, lengths: torch.Tensor, transitions: torch.Tensor, *vectors: torch.Tensor) -> None:
    if emissions.dim() != 3:
        raise ValueError(f"emissions must be (B, T, K), got {tuple(emissions.shape)}")
    B, T, K = emissions.shape
    if not 1 <= K <= MAX_LABELS:
        raise ValueError(f"the kernels take 1 to {MAX_LABELS} labels, got K={K}")
    if emissions.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"emissions must be float16, bfloat16 or float32, got {emissions.dtype}")
    if tuple(lengths.shape) != (B,) or lengths.dtype != torch.int32:
        raise ValueError(f"lengths must be int32 of shape {(B,)}, got {lengths.dtype} {tuple(lengths.shape)}")
    if tuple(transitions.shape) != (K, K):
        raise ValueError(f"transitions must be {(K, K)}, got {tuple(transitions.shape)}")
    for vector in vectors:
        if tuple(vector.shape) != (K,):
            raise ValueError(f"start and end must be {(K,)}, got {tuple(vector.shape)}")
    for tensor in (lengths, transitions, *vectors):
        if tensor.device != emissions.device:
            raise ValueError(f"all tensors must be on {emissions.device}, got one on {tensor.device}")


def viterbi(
    emissions: torch.Tensor,
    lengths: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The best path of every sequence: one launch, backtracking included.

    RETURNS (Tuple[Tensor, Tensor]): paths, (B, T) long (padded steps repeat
        the last real label), and their scores, (B,) float32 (0 if empty).
    """
    _check(emissions, lengths, transitions, start, end)
    B, T, K = emissions.shape
    paths = torch.empty(B, T, dtype=torch.long, device=emissions.device)
    best = torch.empty(B, dtype=torch.float32, device=emissions.device)
    if B == 0 or T == 0:
        return paths, best.zero_()
    # backpointer scratch: label ids fit in int8 up to K = 128
    pointer_dtype = torch.int8 if K <= 128 else torch.int16
    pointers = torch.empty(B, T, K, dtype=pointer_dtype, device=emissions.device)
    block_k = _block_k(K)
    _viterbi_kernel[(B,)](
        emissions,
        *emissions.stride(),
        lengths,
        transitions.contiguous(),
        start.contiguous(),
        end.contiguous(),
        pointers,
        paths,
        best,
        T,
        K,
        BLOCK_K=block_k,
        BLOCK_T=32,
        num_warps=_NUM_WARPS["viterbi"][block_k],
        enable_fp_fusion=True,
    )
    return paths, best


def _allowed_args(emissions: torch.Tensor, allowed: Optional[torch.Tensor]) -> Tuple[torch.Tensor, int, int, int]:
    if allowed is None:
        return emissions, 0, 0, 0  # never read
    if tuple(allowed.shape) != tuple(emissions.shape) or allowed.dtype != torch.bool:
        raise ValueError(f"allowed must be bool {tuple(emissions.shape)}, got {allowed.dtype} {tuple(allowed.shape)}")
    s_b, s_t, s_k = allowed.stride()
    return allowed.view(torch.uint8), s_b, s_t, s_k


def forward(
    emissions: torch.Tensor,
    lengths: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
    *,
    allowed: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """log Z by the forward algorithm, one launch.

    allowed (Optional[Tensor]): (B, T, K) bool; emissions of labels not
        allowed count as NEG_INF (the partial-label numerator of the NLL).
    RETURNS (Tuple[Tensor, Tensor]): log Z, (B,) float32 (0 if empty), and the
        alphas, (B, T, K) float32 (steps past a sequence's length unset),
        which `backward` reads.
    """
    _check(emissions, lengths, transitions, start, end)
    B, T, K = emissions.shape
    alphas = torch.empty(B, T, K, dtype=torch.float32, device=emissions.device)
    log_z = torch.empty(B, dtype=torch.float32, device=emissions.device)
    if B == 0 or T == 0:
        return log_z.zero_(), alphas
    block_k = _block_k(K)
    _forward_kernel[(B,)](
        emissions,
        *emissions.stride(),
        *_allowed_args(emissions, allowed),
        lengths,
        transitions.contiguous(),
        start.contiguous(),
        end.contiguous(),
        alphas,
        log_z,
        T,
        K,
        HAS_ALLOWED=allowed is not None,
        BLOCK_K=block_k,
        num_warps=_NUM_WARPS["forward"][block_k],
        enable_fp_fusion=True,
    )
    return log_z, alphas


def backward(
    emissions: torch.Tensor,
    lengths: torch.Tensor,
    transitions: torch.Tensor,
    end: torch.Tensor,
    alphas: torch.Tensor,
    log_z: torch.Tensor,
    grad_log_z: torch.Tensor,
    *,
    allowed: Optional[torch.Tensor] = None,
    need_transitions: bool = True,
    grad_dtype: Optional[torch.dtype] = None,
) -> Tuple[torch.Tensor, Optional[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The gradient of log Z (forward-backward), one launch.

    alphas, log_z (Tensor): what `forward` returned for the same inputs.
    grad_log_z (Tensor): (B,), the incoming gradient g.
    need_transitions (bool): False skips the expected transition counts.
    grad_dtype (Optional[torch.dtype]): the dtype of the emissions' gradient;
        None for the emissions' own.
    RETURNS (Tuple[Tensor, Optional[Tensor], Tensor, Tensor]): the gradients of
        the emissions (B, T, K) (marginals * g; 0 at padded steps) and float32 per-sequence terms summed over the
        batch: transitions (K, K) (None unless need_transitions), start (K,)
        and end (K,).
    """
    _check(emissions, lengths, transitions, end)
    B, T, K = emissions.shape
    if tuple(alphas.shape) != (B, T, K) or tuple(log_z.shape) != (B,) or tuple(grad_log_z.shape) != (B,):
        raise ValueError(
            f"alphas, log_z and grad_log_z must be {(B, T, K)}, {(B,)} and {(B,)}, got "
            f"{tuple(alphas.shape)}, {tuple(log_z.shape)} and {tuple(grad_log_z.shape)}"
        )
    device = emissions.device
    grad_emissions = torch.empty(B, T, K, dtype=grad_dtype or emissions.dtype, device=device)
    # per-sequence partial sums, added up below: deterministic, no atomics
    grad_transitions = torch.empty(B if need_transitions else 0, K, K, dtype=torch.float32, device=device)
    grad_start = torch.empty(B, K, dtype=torch.float32, device=device)
    grad_end = torch.empty(B, K, dtype=torch.float32, device=device)
    if B and T:
        block_k = _block_k(K)
        _backward_kernel[(B,)](
            emissions,
            *emissions.stride(),
            *_allowed_args(emissions, allowed),
            lengths,
            transitions.contiguous(),
            end.contiguous(),
            alphas,
            log_z,
            grad_log_z.to(torch.float32).contiguous(),
            grad_emissions,
            grad_transitions,
            grad_start,
            grad_end,
            T,
            K,
            HAS_ALLOWED=allowed is not None,
            NEED_TRANSITIONS=need_transitions,
            BLOCK_K=block_k,
            num_warps=_NUM_WARPS["backward"][block_k],
            enable_fp_fusion=True,
        )
    else:
        grad_emissions.zero_()
        grad_start.zero_()
        grad_end.zero_()
    summed_transitions = grad_transitions.sum(0) if need_transitions else None
    return grad_emissions, summed_transitions, grad_start.sum(0), grad_end.sum(0)


def _lengths(mask: torch.Tensor) -> torch.Tensor:
    return mask.sum(1, dtype=torch.int32)  # shape: (B,); masks are left-aligned


class _LogPartition(torch.autograd.Function):
    """log Z by the forward kernel; its gradient by the backward kernel."""

    @staticmethod
    def forward(ctx, emissions, mask, transitions, start, end, allowed):
        lengths = _lengths(mask)
        log_z, alphas = forward(emissions, lengths, transitions, start, end, allowed=allowed)
        ctx.save_for_backward(emissions, lengths, transitions, end, alphas, log_z, allowed)
        ctx.start_dtype = start.dtype
        return log_z

    @staticmethod
    def backward(ctx, grad_log_z):
        emissions, lengths, transitions, end, alphas, log_z, allowed = ctx.saved_tensors
        need_emissions, _, need_transitions, need_start, need_end, _ = ctx.needs_input_grad
        grad_emissions, grad_transitions, grad_start, grad_end = backward(
            emissions,
            lengths,
            transitions,
            end,
            alphas,
            log_z,
            grad_log_z,
            allowed=allowed,
            need_transitions=need_transitions,
        )
        return (
            grad_emissions if need_emissions else None,
            None,
            grad_transitions.to(transitions.dtype) if grad_transitions is not None else None,
            grad_start.to(ctx.start_dtype) if need_start else None,
            grad_end.to(end.dtype) if need_end else None,
            None,
        )


def log_partition(scores: CRFScores, *, allowed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """crf.log_partition by the kernels, autograd included.

    allowed (Optional[Tensor]): (B, T, K) bool; labels not allowed count as
        log 0 (the partial-label sum of the NLL).
    RETURNS (Tensor): (B,) float32, 0 for an empty sequence.
    """
    check_scores(scores)
    emissions, mask, transitions, start, end, _ = scores
    return _LogPartition.apply(emissions, mask, transitions, start, end, allowed)


def negative_log_likelihood(scores: CRFScores, allowed: torch.Tensor) -> torch.Tensor:
    """crf.negative_log_likelihood by the kernels: log Z minus the log-sum
    over the allowed paths, two forward launches and no host sync.

    allowed (Tensor): (B, T, K) bool, the labels each token may take.
    RETURNS (Tensor): (B,) float32, non-negative.
    """
    check_allowed(scores, allowed)
    log_z = log_partition(scores)
    gold = log_partition(scores, allowed=allowed)
    return (log_z - gold).clamp_min(0.0)


def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode by one kernel launch.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long and scores (B,) float32.
    """
    check_scores(scores)
    emissions, mask, transitions, start, end, _ = scores
    return viterbi(emissions, _lengths(mask), transitions, start, end)


def marginals(scores: CRFScores) -> torch.Tensor:
    """crf.marginals by the forward and backward kernels (no transition counts).

    RETURNS (Tensor): (B, T, K) float32; padded rows are 0.
    """
    check_scores(scores)
    emissions, mask, transitions, start, end = (x.detach() for x in scores[:5])
    lengths = _lengths(mask)
    log_z, alphas = forward(emissions, lengths, transitions, start, end)
    ones = torch.ones_like(log_z)
    probs, _, _, _ = backward(
        emissions,
        lengths,
        transitions,
        end,
        alphas,
        log_z,
        ones,
        need_transitions=False,
        grad_dtype=torch.float32,
    )
    return probs
