"""A fused Triton Viterbi kernel for class-factored transitions, at any label count.

factored.py's Viterbi, in one launch for the whole batch, one program per
sequence: for transitions[i, j] = leave[i] + pair[class(i), class(j)] +
enter[j] (factored.split reads these off the dense matrix) a step keeps the
best score of each class's labels, moves between the C classes and spreads
the result back to the K labels, O(K * C) a token with no (K, K) tile. The
torch code loops over the time steps on the host, a handful of small launches
a step, so on a GPU it waits on launches (Turkish morphological bundles, K =
981: about 0.25 ms a token of the longest doc); this kernel loops on the GPU.

    emissions   # shape: (B, T, K)  float16, bfloat16 or float32 (any strides)
    lengths     # shape: (B,)       int32, the mask's row sums (left-aligned masks)
    leave, enter, start, end  # shape: (K,) float32
    pair        # shape: (C, C) float32
    classes     # shape: (K,) int32, 0..C-1

The program walks its labels in blocks of BLOCK_K, so K has no upper bound;
the scores after each step live in a (B, T, K) float32 scratch, which
backtracking reads again: the best predecessor of label j at step t is
argmax_i (score[t - 1, i] + leave[i]) + pair[class(i), class(j)], the same sums
in the same order as factored.py, so the paths equal the torch code's, ties to
the lowest label included (tests/test_triton_factored.py). Under Triton's
interpreter (TRITON_INTERPRET=1 before Triton is imported) it runs on CPU
tensors, which is how CI tests it.
"""
from typing import Tuple

import torch
import triton
import triton.language as tl

from .crf import CRFScores, check_scores
from .factored import check_classes, split
from .triton_crf import _store_last_label

# labels a program handles at once; the (C, BLOCK_K) class tiles stay small
BLOCK_K = 256


@triton.jit
def _class_max(score_row, leave_ptr, cls_ptr, K, c, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr):
    """(BLOCK_C,): the best score[i] + leave[i] of each class's labels."""
    best = tl.full((BLOCK_C,), float("-inf"), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        valid = k < K
        current = tl.load(score_row + k, mask=valid, other=float("-inf")) + tl.load(leave_ptr + k, mask=valid, other=0.0)
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
    em_ptr, s_eb, s_et, s_ek,
    len_ptr, leave_ptr, pair_ptr, enter_ptr, cls_ptr, start_ptr, end_ptr,
    score_ptr, path_ptr, best_ptr,
    T, K, C,
    BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_T: tl.constexpr,
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
    pair = tl.load(pair_ptr + c[:, None] * C + c[None, :], mask=c_valid[:, None] & c_valid[None, :], other=float("-inf"))
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


def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """factored.viterbi_decode by one kernel launch.

    scores (CRFScores): a batch whose `classes` field is set (its dense
        transitions of the factored form); emissions float16, bfloat16 or float32.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label) and their scores (B,) float32 (0 if empty).
    """
    check_scores(scores)
    classes = check_classes(scores)
    emissions, mask = scores.emissions, scores.mask
    if emissions.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"emissions must be float16, bfloat16 or float32, got {emissions.dtype}")
    B, T, K = emissions.shape
    device = emissions.device
    paths = torch.empty(B, T, dtype=torch.long, device=device)
    best = torch.zeros(B, dtype=torch.float32, device=device)
    if B == 0 or T == 0:
        return paths, best
    with torch.no_grad():
        factors = split(scores.transitions.detach().float(), classes)
        step_scores = torch.empty(B, T, K, dtype=torch.float32, device=device)
        C = factors.pair.shape[0]
        _factored_viterbi_kernel[(B,)](
            emissions.detach(), *emissions.stride(),
            mask.sum(1, dtype=torch.int32),
            factors.leave.contiguous(), factors.pair.contiguous(), factors.enter.contiguous(),
            classes.to(torch.int32).contiguous(),
            scores.start.detach().float().contiguous(), scores.end.detach().float().contiguous(),
            step_scores, paths, best,
            T, K, C,
            BLOCK_C=max(triton.next_power_of_2(C), 2), BLOCK_K=min(BLOCK_K, max(triton.next_power_of_2(K), 2)),
            BLOCK_T=32, num_warps=4,
        )
    return paths, best
