"""Viterbi decoding of a padded batch on numpy, or Numba's kernels (no torch).

Small batches with full transitions (up to SMALL_BATCH label pairs over all
steps: one doc typed into a server, the first doc after a cold start) run a
whole-batch numpy recursion; larger ones run viterbi_kernels.py's compiled loops, whose module,
and so Numba itself, is imported at the first such batch: Numba's start (its
import, and loading the cached machine code, about a second) is not paid by a
process that only tags short texts, or before its first large batch. Both
compute the same sums in the same order and choose the first maximal label,
so they give the same paths and scores, bit for bit. Where Numba is missing
or cannot set up (W001), numpy's recursion decodes every batch, a block of
rows at a time (with factored transitions, over their dense matrix: the same
best scores, ties possibly chosen otherwise).
"""

import importlib.util
import warnings
from functools import lru_cache
from types import ModuleType
from typing import Optional, Tuple

import numpy

from ..errors import Warnings

# the most B * T * K * K (label pairs scored over the batch) the numpy recursion runs
SMALL_BATCH = 2_000_000


@lru_cache(maxsize=1)
def _kernels() -> Optional[ModuleType]:
    """viterbi_kernels.py, or None where Numba is not installed or cannot
    set up its kernels (e.g. no writable cache folder: NUMBA_CACHE_DIR),
    with W001; numpy's recursion decodes then."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        from . import viterbi_kernels
    except (ImportError, RuntimeError, OSError) as error:
        warnings.warn(Warnings.W001.format(error=error), stacklevel=2)
        return None
    return viterbi_kernels


def viterbi_decode(
    emissions: numpy.ndarray,
    lengths: numpy.ndarray,
    transitions: numpy.ndarray,
    start: numpy.ndarray,
    end: numpy.ndarray,
    classes: Optional[numpy.ndarray] = None,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The best path of every row of a padded batch.

    emissions (numpy.ndarray): (B, T, K) float32 or float64.
    lengths (numpy.ndarray): (B,) each row's length (0 to T).
    transitions (numpy.ndarray): (K, K); with `classes` in the factored form
        pair[class(i), class(j)] + leave[i] + enter[j].
    start, end (numpy.ndarray): (K,).
    classes (Optional[numpy.ndarray]): (K,) int64 class ids 0..C-1, or None.
    RETURNS (Tuple[ndarray, ndarray]): paths (B, T) int64 (padded steps repeat
        the last real label) and their scores (B,) (0 for an empty row).
    """
    B, T, K = emissions.shape
    dtype = emissions.dtype
    if T == 0 or B == 0:
        return numpy.zeros((B, T), dtype=numpy.int64), numpy.zeros((B,), dtype=dtype)
    kernels = None if classes is None and B * T * K * K <= SMALL_BATCH else _kernels()
    if kernels is None:  # with factored transitions, their dense matrix: the same best scores
        lengths = numpy.asarray(lengths, dtype=numpy.int64)
        block = max(1, SMALL_BATCH // (T * K * K))  # rows at a time: bounded memory
        parts = [
            _numpy_viterbi(emissions[i : i + block], lengths[i : i + block], transitions, start, end)
            for i in range(0, B, block)
        ]
        return numpy.concatenate([p for p, _ in parts]), numpy.concatenate([s for _, s in parts])
    rows = numpy.ascontiguousarray(emissions).reshape(B * T, K)
    step_starts, ranks = numpy.arange(T, dtype=numpy.int64), numpy.arange(B, dtype=numpy.int64) * T
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    start, end = start.astype(dtype), end.astype(dtype)
    paths = numpy.empty((B, T), dtype=numpy.int64)
    best = numpy.empty((B,), dtype=dtype)
    if classes is None:
        kernels.full_kernel(rows, step_starts, ranks, lengths, transitions.astype(dtype), start, end, paths, best)
        return paths, best
    leave, pair, enter = split_factors(transitions.astype(dtype), classes)
    members = numpy.argsort(classes, kind="stable")
    offsets = numpy.concatenate([[0], numpy.cumsum(numpy.bincount(classes, minlength=pair.shape[0]))])
    kernels.factored_kernel(
        rows, step_starts, ranks, lengths, leave, pair, enter, classes, members, offsets, start, end, paths, best
    )
    return paths, best


def split_factors(transitions: numpy.ndarray, classes: numpy.ndarray) -> Tuple[numpy.ndarray, ...]:
    """A factored (K, K) matrix read as (leave (K,), pair (C, C), enter (K,)),
    as spacy_crf.nn.factored.split reads it."""
    K = transitions.shape[0]
    n_classes = int(classes.max()) + 1
    first = numpy.full(n_classes, K, dtype=numpy.int64)
    numpy.minimum.at(first, classes, numpy.arange(K))
    leave = numpy.ascontiguousarray(transitions[:, first[0]])
    between = transitions[first][:, first]
    pair = numpy.ascontiguousarray(between - between[:, :1])
    enter = numpy.ascontiguousarray(transitions[0] - transitions[0][first[classes]])
    return leave, pair, enter


def _numpy_viterbi(
    emissions: numpy.ndarray,
    lengths: numpy.ndarray,
    transitions: numpy.ndarray,
    start: numpy.ndarray,
    end: numpy.ndarray,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The recursion of viterbi_kernels.full_kernel over the whole batch at
    once: max_i (score[i] + transitions[i, j]) + emission[j], the first
    maximal i; padded steps keep the scores (an empty row scores 0)."""
    B, T, K = emissions.shape
    dtype = emissions.dtype
    transitions = transitions.astype(dtype)
    score = start.astype(dtype) + emissions[:, 0]
    pointers = numpy.empty((T, B, K), dtype=numpy.int64)
    for t in range(1, T):
        candidates = score[:, :, None] + transitions[None, :, :]  # shape: (B, K_prev, K)
        best = candidates.argmax(axis=1)
        step = numpy.take_along_axis(candidates, best[:, None, :], axis=1)[:, 0] + emissions[:, t]
        running = (t < lengths)[:, None]
        score = numpy.where(running, step, score)
        pointers[t] = numpy.where(running, best, numpy.arange(K)[None, :])
    final = score + end.astype(dtype)
    label = final.argmax(axis=1)
    best_score = numpy.where(lengths > 0, final[numpy.arange(B), label], 0).astype(dtype)
    paths = numpy.empty((B, T), dtype=numpy.int64)
    paths[:, T - 1] = label
    rows = numpy.arange(B)
    for t in range(T - 1, 0, -1):
        label = pointers[t, rows, label]
        paths[:, t - 1] = label
    return paths, best_score
