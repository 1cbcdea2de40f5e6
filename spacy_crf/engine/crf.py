"""The CRF's forward-backward recursions and n-best paths on numpy (no torch).

The same recursions as spacy_crf.nn.crf, in the same order of operations
(a step is log(exp(scores - max) @ exp(transitions - shift)) + max + shift,
float32), over padded batches: emissions (B, T, K), a bool mask (B, T) of
left-aligned real tokens, transitions (K, K), start and end (K,). A row of
length 0 has log Z 0 and no marginals.
"""

from typing import Tuple

import numpy

from . import NEG_INF

# the most (row, previous label, label, path) extensions nbest_decode ranks at once
NBEST_BLOCK = 8_000_000


def _logmatmul(scores: numpy.ndarray, exp_matrix: numpy.ndarray, shift: numpy.floating) -> numpy.ndarray:
    """log(exp(scores) @ exp(matrix)) for exp_matrix = exp(matrix - shift)."""
    top = scores.max(axis=1, keepdims=True)
    summed = numpy.exp(scores - top) @ exp_matrix
    numpy.maximum(summed, numpy.finfo(scores.dtype).tiny, out=summed)
    result = numpy.log(summed)
    result += top + shift
    return result


def forward_backward(
    emissions: numpy.ndarray, mask: numpy.ndarray, transitions: numpy.ndarray, start: numpy.ndarray, end: numpy.ndarray
) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The forward and backward log-scores of every token and label, and log Z.

    RETURNS (Tuple[ndarray, ndarray, ndarray]): alphas and betas (B, T, K)
        (padded steps carry them on, as spacy_crf.nn.crf's), log Z (B,)
        (0 for an empty row), in float32.
    """
    emissions = emissions.astype(numpy.float32, copy=False)
    B, T, K = emissions.shape
    alphas = numpy.zeros((B, T, K), dtype=numpy.float32)
    betas = numpy.zeros((B, T, K), dtype=numpy.float32)
    if T == 0 or B == 0:
        return alphas, betas, numpy.zeros((B,), dtype=numpy.float32)
    shift = transitions.max()
    exp_transitions = numpy.exp(transitions - shift)
    exp_transitions_t = numpy.ascontiguousarray(exp_transitions.T)
    alpha = start + emissions[:, 0]
    alphas[:, 0] = alpha
    for t in range(1, T):
        step = _logmatmul(alpha, exp_transitions, shift)
        step += emissions[:, t]
        alpha = numpy.where(mask[:, t, None], step, alpha)
        alphas[:, t] = alpha
    beta = numpy.broadcast_to(end, (B, K))
    betas[:, T - 1] = beta
    for t in range(T - 2, -1, -1):
        step = _logmatmul(emissions[:, t + 1] + beta, exp_transitions_t, shift)
        beta = numpy.where(mask[:, t + 1, None], step, beta)
        betas[:, t] = beta
    last = alphas[:, -1] + end
    top = last.max(axis=1)
    log_z = numpy.log(numpy.exp(last - top[:, None]).sum(axis=1)) + top
    return alphas, betas, numpy.where(mask[:, 0], log_z, 0.0).astype(numpy.float32)


def marginals(
    emissions: numpy.ndarray, mask: numpy.ndarray, transitions: numpy.ndarray, start: numpy.ndarray, end: numpy.ndarray
) -> numpy.ndarray:
    """Exact per-token label probabilities, (B, T, K) float32; padded rows 0."""
    alphas, betas, log_z = forward_backward(emissions, mask, transitions, start, end)
    probs = numpy.exp(alphas + betas - log_z[:, None, None])
    probs[~mask] = 0.0
    return probs


def nbest_decode(
    emissions: numpy.ndarray,
    mask: numpy.ndarray,
    transitions: numpy.ndarray,
    start: numpy.ndarray,
    end: numpy.ndarray,
    k: int,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The k highest-scoring paths of every row (k-best Viterbi), as
    spacy_crf.nn.crf.nbest_decode: each label keeps its k best partial paths.

    RETURNS (Tuple[ndarray, ndarray]): paths (B, k, T) int64 and their scores
        (B, k) in descending order; a row with fewer than k paths has -inf
        scores in the spare places; an empty row scores 0. The rows run
        NBEST_BLOCK label extensions at a time (bounded memory for many labels).
    """
    emissions = emissions.astype(numpy.float32, copy=False)
    B, T, K = emissions.shape
    rows = max(1, NBEST_BLOCK // max(1, K * K * k))
    if B > rows:
        parts = [
            _nbest_rows(emissions[i : i + rows], mask[i : i + rows], transitions, start, end, k)
            for i in range(0, B, rows)
        ]
        return numpy.concatenate([p for p, _ in parts]), numpy.concatenate([v for _, v in parts])
    return _nbest_rows(emissions, mask, transitions, start, end, k)


def _nbest_rows(
    emissions: numpy.ndarray,
    mask: numpy.ndarray,
    transitions: numpy.ndarray,
    start: numpy.ndarray,
    end: numpy.ndarray,
    k: int,
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """nbest_decode of a block of rows."""
    B, T, K = emissions.shape
    if T == 0:
        return numpy.zeros((B, k, 0), dtype=numpy.int64), numpy.zeros((B, k), dtype=numpy.float32)
    score = numpy.full((B, K, k), -numpy.inf, dtype=numpy.float32)
    score[:, :, 0] = start + emissions[:, 0]
    identity = numpy.broadcast_to(numpy.arange(K * k).reshape(1, K, k), (B, K, k))
    history = []
    for t in range(1, T):
        # (B, K_prev, K_next, k) -> (B, K_next, K_prev * k)
        extended = score[:, :, None, :] + transitions[None, :, :, None]
        extended = extended.transpose(0, 2, 1, 3).reshape(B, K, K * k)
        pointer = _top_k(extended, k)
        best = numpy.take_along_axis(extended, pointer, axis=2)
        step_mask = mask[:, t, None, None]
        score = numpy.where(step_mask, best + emissions[:, t, :, None], score)
        history.append(numpy.where(step_mask, pointer, identity))
    final = (score + end.reshape(1, K, 1)).reshape(B, K * k)
    state = _top_k(final, min(k, K * k))
    best_scores = numpy.take_along_axis(final, state, axis=1)
    path = [state // k]
    for pointer in reversed(history):
        state = numpy.take_along_axis(pointer.reshape(B, K * k), state, axis=1)
        path.append(state // k)
    path.reverse()
    paths = numpy.stack(path, axis=2)
    best_scores = numpy.where(mask[:, :1], best_scores, 0.0).astype(numpy.float32)
    return paths, best_scores


def _top_k(values: numpy.ndarray, k: int) -> numpy.ndarray:
    """The indices of the k largest values along the last axis, largest
    first, ties by the lower index."""
    order = numpy.argsort(-values, axis=-1, kind="stable")
    return order[..., :k]


def is_forbidden(x: numpy.ndarray) -> numpy.ndarray:
    """Where a score stands for log 0."""
    return x <= NEG_INF / 2
