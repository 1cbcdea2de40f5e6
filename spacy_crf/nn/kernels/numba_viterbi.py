"""The CPU Viterbi as fused loops compiled by Numba: full and factored transitions.

Pure torch and numpy, no spaCy. The torch code (crf.py, factored.py) runs a
step of the recursion as several whole-batch tensor operations, each a pass
over the (rows, K) scores plus a call's overhead; with ~1,000 labels
(morphological bundles) that is most of decoding. Here each row runs its own
loop, every step in one or two passes over K:

- full transitions: max_i (score[i] + transitions[i, j]) for every j, O(K * K)
  a token; each step's scores are kept and the best i is found again going
  back (no backpointers, so the pass is a branch-free max that vectorizes),
  eight predecessors i a pass over j;
- factored transitions (factored.py's form: a[i] + Q[class(i), class(j)] +
  offset[j]): the best score of each class's labels, the best move into each
  class, then each label's score, O(K + C * C) a token; going back, the
  predecessor factored.py chooses (the first of all K labels with the best
  kept score plus class move), searched only among the labels of the classes
  that reach that best.

Both compute the torch code's sums in its order and choose as its argmax does
(the first maximal label), so paths and scores are the same bit for bit, ties
included, in float32 or float64 (tests/nn/test_numba_viterbi.py against crf.py,
factored.py and brute force). Non-finite scores give labels in range (NaN is
never chosen; torch's code may choose it). This module imports Numba:
dispatch.py imports it only where Numba is installed and can cache. One
thread; the compiled code is cached on disk (`cache=True`): the first process
compiles (one to two seconds), later ones load it (about half a second).
"""

from typing import Tuple, Union

import numba
import numpy
import torch

from ..crf import CRFScores, _compute_dtype, check_scores
from ..factored import check_classes, split
from ..packed import PackedScores


@torch.no_grad()
def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode (factored.viterbi_decode where `scores.classes` is
    set) for CPU tensors.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label) and scores (B,) in the compute dtype (0 for an
        empty row).
    """
    check_scores(scores)
    emissions = scores.emissions
    B, T, K = emissions.shape
    # row b's step t is row b * T + t of the (B * T, K) emissions
    rows = emissions.detach().to(_compute_dtype(emissions)).contiguous().view(B * T, K)
    return _decode(rows, torch.arange(T), torch.arange(B) * T, scores)


@torch.no_grad()
def viterbi_decode_packed(scores: PackedScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """`viterbi_decode` of `scores.padded()`, straight from the packed
    emissions (CPU tensors): the same paths and scores, without the padded
    (B, T, K) tensor."""
    data = scores.data.detach()
    rows = data.to(_compute_dtype(data)).contiguous()
    return _decode(rows, scores.step_starts(), scores.ranks(), scores)


def _decode(
    rows: torch.Tensor, step_starts: torch.Tensor, ranks: torch.Tensor, scores: Union[CRFScores, PackedScores]
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decode emissions held as rows: row b's step t is rows[step_starts[t] + ranks[b]]."""
    mask = scores.mask
    B, T = mask.shape
    dtype = rows.dtype
    if T == 0 or B == 0:
        return mask.new_zeros((B, T), dtype=torch.long), rows.new_zeros(B)
    em = rows.numpy()
    where = (step_starts.to(torch.int64).numpy(), ranks.to(torch.int64).numpy())
    lengths = mask.sum(1).numpy()
    start = _host(scores.start, dtype)
    end = _host(scores.end, dtype)
    paths = numpy.empty((B, T), dtype=numpy.int64)
    best = numpy.empty((B,), dtype=em.dtype)
    if scores.classes is None:
        _full(em, *where, lengths, _host(scores.transitions, dtype), start, end, paths, best)
    else:
        classes = check_classes(scores.classes, em.shape[1])
        leave, pair, enter, _, _ = split(scores.transitions.detach().to(dtype), classes)
        # the labels of each class, in label order: members[offsets[c]:offsets[c + 1]]
        members = torch.argsort(classes, stable=True)
        offsets = torch.cat([classes.new_zeros(1), torch.bincount(classes, minlength=pair.shape[0]).cumsum(0)])
        _factored(
            em,
            *where,
            lengths,
            _host(leave, dtype),
            _host(pair, dtype),
            _host(enter, dtype),
            classes.contiguous().numpy(),
            members.numpy(),
            offsets.numpy(),
            start,
            end,
            paths,
            best,
        )
    return torch.from_numpy(paths), torch.from_numpy(best)


def _host(x: torch.Tensor, dtype: torch.dtype) -> numpy.ndarray:
    return x.detach().to(dtype).contiguous().numpy()


@numba.njit(cache=True, nogil=True, inline="always")
def _finish(score, end, best, b, length):  # pragma: no cover - compiled
    """The best last label of row b; its score into best[b] (0 if empty)."""
    top = -numpy.inf
    label = 0
    for j in range(score.shape[0]):
        v = score[j] + end[j]
        if v > top:
            top = v
            label = j
    best[b] = top if length > 0 else 0.0
    return label


@numba.njit(cache=True, nogil=True)
def _full(em, step_starts, ranks, lengths, transitions, start, end, paths, best):  # pragma: no cover
    # Each step's best scores are kept (alpha), not backpointers: going back,
    # a step's best predecessor is found again as the first i with the best
    # alpha[t - 1, i] + transitions[i, label], the same sums as going
    # forward, so the same label as a kept pointer. Without the pointers the
    # forward loop is a branch-free max over j that LLVM vectorizes.
    B, T = paths.shape
    K = em.shape[1]
    K8 = K - K % 8
    alpha = numpy.empty((T, K), dtype=start.dtype)
    candidate = numpy.empty_like(start)
    for b in range(B):
        length = max(lengths[b], 1)  # an empty row is decoded as one step, its score 0
        for j in range(K):
            alpha[0, j] = start[j] + em[step_starts[0] + ranks[b], j]
        for t in range(1, length):
            row = step_starts[t] + ranks[b]
            for j in range(K):
                candidate[j] = -numpy.inf
            # eight predecessors a pass over j, folded in label order (the
            # same max as one at a time): the running max stays in a register
            # for eight of them instead of a load and a store each (LLVM
            # unrolls the loop over k; `python -m benchmarks.cpu_viterbi`
            # measures it, docs/design.md)
            for i in range(0, K8, 8):
                for j in range(K):
                    c = candidate[j]
                    for k in range(8):
                        v = alpha[t - 1, i + k] + transitions[i + k, j]
                        c = v if v > c else c
                    candidate[j] = c
            for i in range(K8, K):
                s = alpha[t - 1, i]
                for j in range(K):
                    v = s + transitions[i, j]
                    c = candidate[j]
                    candidate[j] = v if v > c else c
            for j in range(K):
                alpha[t, j] = candidate[j] + em[row, j]
        label = _finish(alpha[length - 1], end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            top = -numpy.inf
            chosen = 0  # 0 where nothing compares (NaN), as a pointer never set
            for i in range(K):
                v = alpha[t - 1, i] + transitions[i, label]
                if v > top:
                    top = v
                    chosen = i
            label = chosen
            paths[b, t - 1] = label


@numba.njit(cache=True, nogil=True)
def _factored(
    em, step_starts, ranks, lengths, leave, pair, enter, classes, members, offsets, start, end, paths, best
):  # pragma: no cover - compiled
    B, T = paths.shape
    K = em.shape[1]
    C = pair.shape[0]
    score = numpy.empty_like(start)
    into = numpy.empty_like(pair[0])  # the best move into each class
    # kept for going back: each label's score + leave, and its best in each class
    leaving = numpy.empty((T, K), dtype=start.dtype)
    in_class = numpy.empty((T, C), dtype=start.dtype)
    for b in range(B):
        length = max(lengths[b], 1)
        for j in range(K):
            score[j] = start[j] + em[step_starts[0] + ranks[b], j]
        for t in range(1, length):
            row = step_starts[t] + ranks[b]
            for c in range(C):
                in_class[t, c] = -numpy.inf
            for i in range(K):
                v = score[i] + leave[i]
                leaving[t, i] = v
                c = classes[i]
                if v > in_class[t, c]:
                    in_class[t, c] = v
            for c in range(C):
                m = -numpy.inf
                for p in range(C):
                    v = in_class[t, p] + pair[p, c]
                    if v > m:
                        m = v
                into[c] = m
            for j in range(K):
                score[j] = into[classes[j]] + enter[j] + em[row, j]
        label = _finish(score, end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            # torch's choice (factored.py): the first label i with the best
            # leaving[i] + Q[class(i), c]. That best is the best over classes p
            # of in_class[p] + Q[p, c], and only the classes that reach it
            # hold such labels: their labels are searched, in label order.
            c = classes[label]
            top = -numpy.inf
            for p in range(C):
                v = in_class[t, p] + pair[p, c]
                if v > top:
                    top = v
            chosen = K
            for p in range(C):
                if in_class[t, p] + pair[p, c] == top:
                    for k in range(offsets[p], offsets[p + 1]):
                        i = members[k]
                        if i >= chosen:
                            break
                        if leaving[t, i] + pair[p, c] == top:
                            chosen = i
                            break
            label = chosen if chosen < K else 0  # 0 where nothing compares (NaN), as argmax of -inf
            paths[b, t - 1] = label
