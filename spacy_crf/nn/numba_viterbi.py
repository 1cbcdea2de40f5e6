"""The CPU Viterbi as fused loops compiled by Numba: full and factored transitions.

Pure torch and numpy, no spaCy. The torch code (crf.py, factored.py) runs a
step of the recursion as several whole-batch tensor operations, each a pass
over the (rows, K) scores plus a call's overhead; with ~1,000 labels
(morphological bundles) that is most of decoding. Here each row runs its own
loop, every step in one or two passes over K:

- full transitions: max_i (score[i] + transitions[i, j]) for every j, with
  the best i kept as the backpointer, O(K * K) a token;
- factored transitions (factored.py's form: a[i] + Q[class(i), class(j)] +
  offset[j]): the best label of each class, the best class to come from into
  each class, then each label's score, O(K + C * C) a token, with one
  backpointer a class.

Both give the paths and scores of the torch code exactly, ties included (the
first maximal label, as torch's argmax), in float32 or float64
(tests/test_numba_viterbi.py against crf.py, factored.py and brute force).
This module imports Numba: dispatch.py imports it only where Numba is
installed. One thread; the compiled code is cached on disk (`cache=True`),
so only a process that finds no cache compiles (about a second).
"""
from typing import Tuple

import numba
import numpy
import torch

from .crf import CRFScores, _compute_dtype, check_scores
from .factored import check_classes, split


@torch.no_grad()
def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode (factored.viterbi_decode where `scores.classes` is
    set) for CPU tensors.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label) and scores (B,) in the compute dtype (0 for an
        empty row).
    """
    check_scores(scores)
    emissions, mask = scores.emissions, scores.mask
    dtype = _compute_dtype(emissions)
    B, T, K = emissions.shape
    if T == 0 or B == 0:
        return mask.new_zeros((B, T), dtype=torch.long), emissions.new_zeros(B, dtype=dtype)
    em = emissions.detach().to(dtype).contiguous().numpy()
    lengths = mask.sum(1).numpy()
    start = _host(scores.start, dtype)
    end = _host(scores.end, dtype)
    paths = numpy.empty((B, T), dtype=numpy.int64)
    best = numpy.empty((B,), dtype=em.dtype)
    if scores.classes is None:
        _full(em, lengths, _host(scores.transitions, dtype), start, end, paths, best)
    else:
        classes = check_classes(scores)
        leave, pair, enter, _, _ = split(scores.transitions.detach().to(dtype), classes)
        _factored(
            em, lengths, _host(leave, dtype), _host(pair, dtype), _host(enter, dtype),
            classes.contiguous().numpy(), start, end, paths, best,
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
def _full(em, lengths, transitions, start, end, paths, best):  # pragma: no cover - compiled
    B, T, K = em.shape
    score = numpy.empty_like(start)
    candidate = numpy.empty_like(start)
    pointer = numpy.zeros(K, numpy.int64)
    back = numpy.zeros((T, K), numpy.int64)
    for b in range(B):
        length = max(lengths[b], 1)  # an empty row is decoded as one step, its score 0
        for j in range(K):
            score[j] = start[j] + em[b, 0, j]
        for t in range(1, length):
            for j in range(K):
                candidate[j] = -numpy.inf
                pointer[j] = 0
            for i in range(K):
                s = score[i]
                for j in range(K):
                    v = s + transitions[i, j]
                    if v > candidate[j]:
                        candidate[j] = v
                        pointer[j] = i
            for j in range(K):
                score[j] = candidate[j] + em[b, t, j]
                back[t, j] = pointer[j]
        label = _finish(score, end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            label = back[t, label]
            paths[b, t - 1] = label

@numba.njit(cache=True, nogil=True)
def _factored(em, lengths, leave, pair, enter, classes, start, end, paths, best):  # pragma: no cover
    B, T, K = em.shape
    C = pair.shape[0]
    score = numpy.empty_like(start)
    in_class = numpy.empty_like(pair[0])  # best score + leave within each class
    first = numpy.zeros(C, numpy.int64)  # ... and its first label
    into = numpy.empty_like(pair[0])  # the best move into each class
    back = numpy.zeros((T, C), numpy.int64)  # the label it comes from
    for b in range(B):
        length = max(lengths[b], 1)
        for j in range(K):
            score[j] = start[j] + em[b, 0, j]
        for t in range(1, length):
            for c in range(C):
                in_class[c] = -numpy.inf
                first[c] = K
            for i in range(K):
                v = score[i] + leave[i]
                c = classes[i]
                if v > in_class[c]:
                    in_class[c] = v
                    first[c] = i
            for c in range(C):
                m = -numpy.inf
                source = K
                for p in range(C):
                    v = in_class[p] + pair[p, c]
                    # ties: the lowest label, as torch's argmax over all labels
                    if v > m or (v == m and first[p] < source):
                        m = v
                        source = first[p]
                into[c] = m
                back[t, c] = source
            for j in range(K):
                score[j] = into[classes[j]] + enter[j] + em[b, t, j]
        label = _finish(score, end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            label = back[t, classes[label]]
            paths[b, t - 1] = label
