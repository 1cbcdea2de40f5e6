"""Fused Triton kernels for class-factored transitions, at any label count:
Viterbi, and the forward and backward recursions behind log Z, its gradient
and the marginals.

For transitions[i, j] = leave[i] + pair[class(i), class(j)] + enter[j]
(factored.split reads these off the dense matrix), a step of factored.py's
recursions reduces each class's labels, moves between the C classes and
spreads the result back to the K labels, O(K * C) a token with no (K, K) tile.
The torch code loops over the time steps on the host, a handful of small
launches a step (and as many again for autograd), so on a GPU it waits on
launches (Turkish morphological bundles, K = 981: about 0.25 ms a token of the
longest doc). These kernels run the whole batch in one launch, one program per
sequence, which loops over its own length on the GPU.

    emissions   # shape: (B, T, K)  float16, bfloat16 or float32 (any strides)
    lengths     # shape: (B,)       int32, the mask's row sums (left-aligned masks)
    leave, enter, start, end  # shape: (K,) float32
    pair        # shape: (C, C) float32
    classes     # shape: (K,) int32, 0..C-1

A program walks its labels in blocks of BLOCK_K, so K has no upper bound.
Viterbi keeps the scores after each step in a (B, T, K) float32 scratch, which
backtracking reads again: the best predecessor of label j at step t is
argmax_i (score[t - 1, i] + leave[i]) + pair[class(i), class(j)], the same sums
in the same order as factored.py, so the paths equal the torch code's, ties to
the lowest label included. The forward and backward kernels run the step with
log-sum-exp in place of max (factored.forward_scores and backward_scores) and
store the alphas, the betas and, per step, each class's log-sum (the C-wide
quantities the transition counts need), so the gradient and the marginals are
a few batched torch operations with no time loop (`_gradients`). Under
Triton's interpreter (TRITON_INTERPRET=1 before Triton is imported) they run
on CPU tensors, which is how CI tests them (tests/nn/test_triton_factored.py).
"""

from typing import NamedTuple, Tuple

import torch
import triton
import triton.language as tl

from ..crf import CRFScores, check_scores
from ..factored import check_classes, split
from .triton_crf import _TINY, _store_last_label

# labels a program handles at once; the (C, BLOCK_K) class tiles stay small
BLOCK_K = 256


@triton.jit
def _class_max(score_row, leave_ptr, cls_ptr, K, c, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr):
    """(BLOCK_C,): the best score[i] + leave[i] of each class's labels."""
    best = tl.full((BLOCK_C,), float("-inf"), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        current = tl.load(score_row + k, mask=valid, other=float("-inf")) + tl.load(
            leave_ptr + k, mask=valid, other=0.0
        )
        cls = tl.load(cls_ptr + k, mask=valid, other=-1)
        tile = tl.where(cls[None, :] == c[:, None], current[None, :], float("-inf"))  # shape: (C, BLOCK_K)
        best = tl.maximum(best, tl.max(tile, axis=1))
    return best


@triton.jit
def _best_label(row, vec_ptr, cls_ptr, pair_ptr, C, K, into, USE_PAIR: tl.constexpr, BLOCK_K: tl.constexpr):
    """The first label i maximising row[i] + vec[i] (+ pair[class(i), into]
    with USE_PAIR), and that maximum: the sums of factored.py, in its order."""
    best = tl.full((), float("-inf"), tl.float32)
    label = tl.full((), 0, tl.int32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        value = tl.load(row + k, mask=valid, other=0.0) + tl.load(vec_ptr + k, mask=valid, other=0.0)
        if USE_PAIR:
            cls = tl.load(cls_ptr + k, mask=valid, other=0)
            value = value + tl.load(pair_ptr + cls * C + into, mask=valid, other=0.0)
        value = tl.where(valid, value, float("-inf"))
        block_best, block_label = tl.max(value, axis=0, return_indices=True, return_indices_tie_break_left=True)
        # a later block wins only with a strictly higher score: ties keep the lowest label
        better = block_best > best
        label = tl.where(better, (k0 + block_label).to(tl.int32), label)
        best = tl.where(better, block_best, best)
    return best, label


@triton.jit(do_not_specialize=["s_eb", "T"])
def _factored_viterbi_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    len_ptr,
    leave_ptr,
    pair_ptr,
    enter_ptr,
    cls_ptr,
    start_ptr,
    end_ptr,
    score_ptr,
    path_ptr,
    best_ptr,
    T,
    K,
    C,
    BLOCK_C: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    # an empty sequence still decodes its first step, as the torch code does,
    # but scores 0
    n = tl.maximum(length, 1)
    em = em_ptr + b * s_eb
    scores = score_ptr + b * T * K  # scores[t, j]: the best path ending in label j at step t
    c = tl.arange(0, BLOCK_C)
    c_valid = c < C
    pair = tl.load(
        pair_ptr + c[:, None] * C + c[None, :], mask=c_valid[:, None] & c_valid[None, :], other=float("-inf")
    )
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        first = tl.load(start_ptr + k, mask=valid) + tl.load(em + k * s_ek, mask=valid).to(tl.float32)
        tl.store(scores + k, first, mask=valid)
    tl.debug_barrier()
    for t in range(1, n):
        previous = scores + (t - 1) * K
        best_in_class = _class_max(previous, leave_ptr, cls_ptr, K, c, BLOCK_C, BLOCK_K)
        to_class = tl.max(best_in_class[:, None] + pair, axis=0)  # shape: (C,), into each class
        to_class = tl.where(c_valid, to_class, float("-inf"))
        for k0 in range(0, K, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            valid = k < K
            cls = tl.load(cls_ptr + k, mask=valid, other=-1)
            # each label's class score: to_class[class(k)]
            into = tl.max(tl.where(cls[None, :] == c[:, None], to_class[:, None], float("-inf")), axis=0)
            emit = tl.load(em + t * s_et + k * s_ek, mask=valid, other=0.0).to(tl.float32)
            step = (into + tl.load(enter_ptr + k, mask=valid, other=0.0)) + emit
            tl.store(scores + t * K + k, step, mask=valid)
        tl.debug_barrier()  # step t's scores, stored by every thread, are visible
    best, label = _best_label(scores + (n - 1) * K, end_ptr, cls_ptr, pair_ptr, C, K, 0, False, BLOCK_K)
    tl.store(best_ptr + b, tl.where(length > 0, best, 0.0))
    path = path_ptr + b * T
    _store_last_label(path, label, n, T, BLOCK_T)
    for u in range(1, n):
        t = n - u
        into = tl.load(cls_ptr + label)
        _, label = _best_label(scores + (t - 1) * K, leave_ptr, cls_ptr, pair_ptr, C, K, into, True, BLOCK_K)
        tl.store(path + t - 1, label.to(tl.int64))


@triton.jit
def _class_logsumexp(
    row, vec_ptr, em, s_ek, cls_ptr, K, c, HAS_EMIT: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr
):
    """(BLOCK_C,): log sum over each class's labels i of exp(row[i] + vec[i]
    (+ the emissions at em with HAS_EMIT)); -inf for a class without labels."""
    top = tl.full((BLOCK_C,), float("-inf"), tl.float32)
    total = tl.zeros((BLOCK_C,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        x = tl.load(row + k, mask=valid, other=0.0) + tl.load(vec_ptr + k, mask=valid, other=0.0)
        if HAS_EMIT:
            x = x + tl.load(em + k * s_ek, mask=valid, other=0.0).to(tl.float32)
        cls = tl.load(cls_ptr + k, mask=valid, other=-1)
        tile = tl.where(cls[None, :] == c[:, None], x[None, :], float("-inf"))  # shape: (C, BLOCK_K)
        new_top = tl.maximum(top, tl.max(tile, axis=1))
        shift = tl.where(new_top > float("-inf"), new_top, 0.0)
        total = total * tl.exp(top - shift) + tl.sum(tl.exp(tile - shift[:, None]), axis=1)
        top = new_top
    shift = tl.where(top > float("-inf"), top, 0.0)
    return _log_or_neg_inf(total) + shift


@triton.jit
def _log_or_neg_inf(total):
    """log(total), -inf where total is 0 (a class without labels), without
    taking the log of 0."""
    return tl.where(total > 0, tl.log(tl.maximum(total, _TINY)), float("-inf"))


@triton.jit
def _spread(into_class, cls_ptr, k, valid, c):
    """(BLOCK_K,): into_class[class(k)] for each label k of the block."""
    cls = tl.load(cls_ptr + k, mask=valid, other=-1)
    return tl.max(tl.where(cls[None, :] == c[:, None], into_class[:, None], float("-inf")), axis=0)


@triton.jit
def _logsumexp_tile(tile, axis: tl.constexpr):
    top = tl.max(tile, axis=axis)
    shift = tl.where(top > float("-inf"), top, 0.0)
    if axis == 0:
        return _log_or_neg_inf(tl.sum(tl.exp(tile - shift[None, :]), axis=0)) + shift
    return _log_or_neg_inf(tl.sum(tl.exp(tile - shift[:, None]), axis=1)) + shift


@triton.jit(do_not_specialize=["s_eb", "T"])
def _factored_forward_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    len_ptr,
    leave_ptr,
    pair_ptr,
    enter_ptr,
    cls_ptr,
    start_ptr,
    end_ptr,
    alpha_ptr,
    by_class_ptr,
    logz_ptr,
    T,
    K,
    C,
    BLOCK_C: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    em = em_ptr + b * s_eb
    alphas = alpha_ptr + b * T * K
    by_class = by_class_ptr + b * T * BLOCK_C  # [t, c]: log-sum of alpha[t - 1, i] + leave[i] over class c
    c = tl.arange(0, BLOCK_C)
    c_valid = c < C
    pair = tl.load(
        pair_ptr + c[:, None] * C + c[None, :], mask=c_valid[:, None] & c_valid[None, :], other=float("-inf")
    )
    for k0 in range(0, K * tl.minimum(length, 1), BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        first = tl.load(start_ptr + k, mask=valid, other=0.0) + tl.load(em + k * s_ek, mask=valid, other=0.0).to(
            tl.float32
        )
        tl.store(alphas + k, first, mask=valid)
    tl.debug_barrier()
    for t in range(1, length):
        leaving = _class_logsumexp(alphas + (t - 1) * K, leave_ptr, em, s_ek, cls_ptr, K, c, False, BLOCK_C, BLOCK_K)
        tl.store(by_class + t * BLOCK_C + c, leaving)
        to_class = _logsumexp_tile(leaving[:, None] + pair, 0)  # shape: (C,)
        for k0 in range(0, K, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            valid = k < K
            emit = tl.load(em + t * s_et + k * s_ek, mask=valid, other=0.0).to(tl.float32)
            step = _spread(to_class, cls_ptr, k, valid, c) + tl.load(enter_ptr + k, mask=valid, other=0.0) + emit
            tl.store(alphas + t * K + k, step, mask=valid)
        tl.debug_barrier()
    last = tl.maximum(length, 1) - 1
    ending = _class_logsumexp(alphas + last * K, end_ptr, em, s_ek, cls_ptr, K, c, False, BLOCK_C, BLOCK_K)
    top = tl.max(ending, axis=0)
    log_z = tl.log(tl.sum(tl.exp(ending - top), axis=0)) + top
    tl.store(logz_ptr + b, tl.where(length > 0, log_z, 0.0))


@triton.jit(do_not_specialize=["s_eb", "T"])
def _factored_backward_kernel(
    em_ptr,
    s_eb,
    s_et,
    s_ek,
    len_ptr,
    leave_ptr,
    pair_ptr,
    enter_ptr,
    cls_ptr,
    end_ptr,
    beta_ptr,
    by_class_ptr,
    T,
    K,
    C,
    BLOCK_C: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(len_ptr + b)
    em = em_ptr + b * s_eb
    betas = beta_ptr + b * T * K
    by_class = by_class_ptr + b * T * BLOCK_C  # [t, c]: log-sum of enter[j] + emit[t, j] + beta[t, j] over class c
    c = tl.arange(0, BLOCK_C)
    c_valid = c < C
    pair = tl.load(
        pair_ptr + c[:, None] * C + c[None, :], mask=c_valid[:, None] & c_valid[None, :], other=float("-inf")
    )
    last = length - 1
    for k0 in range(0, K * tl.minimum(length, 1), BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        tl.store(betas + last * K + k, tl.load(end_ptr + k, mask=valid, other=0.0), mask=valid)
    tl.debug_barrier()
    for u in range(1, length):
        t = last - u  # beta[t] from beta[t + 1]
        entering = _class_logsumexp(
            betas + (t + 1) * K, enter_ptr, em + (t + 1) * s_et, s_ek, cls_ptr, K, c, True, BLOCK_C, BLOCK_K
        )
        tl.store(by_class + (t + 1) * BLOCK_C + c, entering)
        from_class = _logsumexp_tile(pair + entering[None, :], 1)  # shape: (C,)
        for k0 in range(0, K, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            valid = k < K
            step = _spread(from_class, cls_ptr, k, valid, c) + tl.load(leave_ptr + k, mask=valid, other=0.0)
            tl.store(betas + t * K + k, step, mask=valid)
        tl.debug_barrier()


class _Factors(NamedTuple):
    """A batch in the kernels' layout: float32 factors, int32 classes and lengths."""

    emissions: torch.Tensor
    lengths: torch.Tensor
    leave: torch.Tensor
    pair: torch.Tensor
    enter: torch.Tensor
    classes: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor

    @property
    def block_c(self) -> int:
        return max(triton.next_power_of_2(self.pair.shape[0]), 2)

    @property
    def block_k(self) -> int:
        return min(BLOCK_K, max(triton.next_power_of_2(self.emissions.shape[2]), 2))


def _forward(f: _Factors) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log Z (B,), the alphas (B, T, K) and the class log-sums (B, T, BLOCK_C)
    of one forward launch; entries past a row's length are 0."""
    B, T, K = f.emissions.shape
    alphas = f.emissions.new_zeros(B, T, K, dtype=torch.float32)
    by_class = f.emissions.new_zeros(B, T, f.block_c, dtype=torch.float32)
    log_z = f.emissions.new_zeros(B, dtype=torch.float32)
    _factored_forward_kernel[(B,)](
        f.emissions,
        *f.emissions.stride(),
        f.lengths,
        f.leave,
        f.pair,
        f.enter,
        f.classes,
        f.start,
        f.end,
        alphas,
        by_class,
        log_z,
        T,
        K,
        f.pair.shape[0],
        BLOCK_C=f.block_c,
        BLOCK_K=f.block_k,
        num_warps=4,
    )
    return log_z, alphas, by_class


def _backward(f: _Factors) -> Tuple[torch.Tensor, torch.Tensor]:
    """The betas (B, T, K) and class log-sums (B, T, BLOCK_C) of one backward launch."""
    B, T, K = f.emissions.shape
    betas = f.emissions.new_zeros(B, T, K, dtype=torch.float32)
    by_class = f.emissions.new_zeros(B, T, f.block_c, dtype=torch.float32)
    _factored_backward_kernel[(B,)](
        f.emissions,
        *f.emissions.stride(),
        f.lengths,
        f.leave,
        f.pair,
        f.enter,
        f.classes,
        f.end,
        betas,
        by_class,
        T,
        K,
        f.pair.shape[0],
        BLOCK_C=f.block_c,
        BLOCK_K=f.block_k,
        num_warps=4,
    )
    return betas, by_class


def _probabilities(f: _Factors, mask: torch.Tensor, log_z, alphas, betas) -> torch.Tensor:
    """(B, T, K) marginals, 0 at padded steps."""
    probs = torch.exp(alphas + betas - log_z[:, None, None])
    return torch.where(mask[..., None], probs, torch.zeros_like(probs))


def _gradients(f: _Factors, mask: torch.Tensor, grad_log_z: torch.Tensor, log_z, alphas, leaving):
    """d log Z times grad_log_z to the emissions, leave, pair, enter, start
    and end: the marginals and the expected transition counts between classes."""
    betas, entering = _backward(f)
    C = f.pair.shape[0]
    weights = grad_log_z.to(torch.float32)
    probs = _probabilities(f, mask, log_z, alphas, betas) * weights[:, None, None]  # shape: (B, T, K)
    lengths = f.lengths.long()
    steps = torch.arange(mask.shape[1], device=mask.device)
    moved = (steps[None, :] >= 1) & (steps[None, :] < lengths[:, None])  # a transition into step t
    left = steps[None, :] < lengths[:, None] - 1  # a transition out of step t
    grad_enter = (probs * moved[..., None]).sum((0, 1))
    grad_leave = (probs * left[..., None]).sum((0, 1))
    grad_start = probs[:, 0].sum(0) if mask.shape[1] else probs.new_zeros(f.emissions.shape[2])
    last = (lengths - 1).clamp(min=0)
    grad_end = probs.gather(1, last[:, None, None].expand(-1, 1, probs.shape[2])).squeeze(1).sum(0)
    # P(class c' at t - 1, class c at t) = exp(leaving[t, c'] + pair[c', c] + entering[t, c] - log Z)
    pairs = leaving[..., :C, None] + f.pair + entering[:, :, None, :C] - log_z[:, None, None, None]
    counts = torch.where(moved[..., None, None], torch.exp(pairs), torch.zeros_like(pairs))
    grad_pair = (counts * weights[:, None, None, None]).sum((0, 1))
    return probs, grad_leave, grad_pair, grad_enter, grad_start, grad_end


class _FactoredLogPartition(torch.autograd.Function):
    """log Z by the forward kernel; its gradient by the backward kernel and `_gradients`."""

    @staticmethod
    def forward(ctx, emissions, mask, leave, pair, enter, start, end, classes):
        f = _factors(emissions, mask, leave, pair, enter, start, end, classes)
        log_z, alphas, leaving = _forward(f)
        ctx.save_for_backward(emissions, mask, leave, pair, enter, start, end, classes, log_z, alphas, leaving)
        return log_z

    @staticmethod
    def backward(ctx, grad_log_z):
        emissions, mask, leave, pair, enter, start, end, classes, log_z, alphas, leaving = ctx.saved_tensors
        f = _factors(emissions, mask, leave, pair, enter, start, end, classes)
        grads = _gradients(f, mask, grad_log_z, log_z, alphas, leaving)
        inputs = (emissions, leave, pair, enter, start, end)
        emissions_grad, *rest = (g.to(x.dtype) for g, x in zip(grads, inputs))
        return (emissions_grad, None, *rest, None)


def _factors(emissions, mask, leave, pair, enter, start, end, classes) -> _Factors:
    return _Factors(
        emissions.detach(),
        mask.sum(1, dtype=torch.int32),
        leave.detach().float().contiguous(),
        pair.detach().float().contiguous(),
        enter.detach().float().contiguous(),
        classes.to(torch.int32).contiguous(),
        start.detach().float().contiguous(),
        end.detach().float().contiguous(),
    )


def _checked(scores: CRFScores):
    check_scores(scores)
    classes = check_classes(scores.classes, scores.emissions.shape[2])
    if scores.emissions.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"emissions must be float16, bfloat16 or float32, got {scores.emissions.dtype}")
    return classes


def log_partition(scores: CRFScores) -> torch.Tensor:
    """factored.log_partition by the kernels: (B,) float32 log Z (0 for an
    empty sequence), with its gradient to the emissions, start, end and,
    through factored.split, to the dense transition matrix."""
    classes = _checked(scores)
    B, T, _ = scores.emissions.shape
    if B == 0 or T == 0:
        return scores.emissions.new_zeros(B, dtype=torch.float32)
    factors = split(scores.transitions.float(), classes)
    return _FactoredLogPartition.apply(
        scores.emissions, scores.mask, factors.leave, factors.pair, factors.enter, scores.start, scores.end, classes
    )


@torch.no_grad()
def marginals(scores: CRFScores) -> torch.Tensor:
    """factored.marginals by the forward and backward kernels.

    RETURNS (Tensor): (B, T, K) float32; padded steps are 0.
    """
    classes = _checked(scores)
    B, T, K = scores.emissions.shape
    if B == 0 or T == 0:
        return scores.emissions.new_zeros(B, T, K, dtype=torch.float32)
    factors = split(scores.transitions.float(), classes)
    f = _factors(
        scores.emissions, scores.mask, factors.leave, factors.pair, factors.enter, scores.start, scores.end, classes
    )
    log_z, alphas, _ = _forward(f)
    betas, _ = _backward(f)
    return _probabilities(f, scores.mask, log_z, alphas, betas)


@torch.no_grad()
def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """factored.viterbi_decode by one kernel launch.

    scores (CRFScores): a batch whose `classes` field is set (its dense
        transitions of the factored form); emissions float16, bfloat16 or float32.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label) and their scores (B,) float32 (0 if empty).
    """
    classes = _checked(scores)
    B, T, K = scores.emissions.shape
    device = scores.emissions.device
    paths = torch.empty(B, T, dtype=torch.long, device=device)
    best = torch.zeros(B, dtype=torch.float32, device=device)
    if B == 0 or T == 0:
        return paths, best
    factors = split(scores.transitions.float(), classes)
    f = _factors(
        scores.emissions, scores.mask, factors.leave, factors.pair, factors.enter, scores.start, scores.end, classes
    )
    step_scores = torch.empty(B, T, K, dtype=torch.float32, device=device)
    _factored_viterbi_kernel[(B,)](
        f.emissions,
        *f.emissions.stride(),
        f.lengths,
        f.leave,
        f.pair,
        f.enter,
        f.classes,
        f.start,
        f.end,
        step_scores,
        paths,
        best,
        T,
        K,
        f.pair.shape[0],
        BLOCK_C=f.block_c,
        BLOCK_K=f.block_k,
        BLOCK_T=32,
        num_warps=4,
    )
    return paths, best
