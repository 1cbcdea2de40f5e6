"""Exact posterior probabilities of entity spans on numpy (no torch).

spacy_crf.nn.spans's computation (see its docstring for the patterns and the
formula), step for step, over padded float32 batches: emissions (B, T, K), a
bool mask (B, T), transitions (K, K), start and end (K,), with the passes of
`spacy_crf.engine.crf.forward_backward`. Full transitions only: the entity
schemes' constraints always give crf_ner a full matrix.
"""

from typing import Optional, Tuple

import numpy

from . import NEG_INF

# the columns of a pattern
SINGLE, FIRST, MIDDLE, LAST, NOT_AFTER = range(5)
Passes = Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]


def _logsumexp(x: numpy.ndarray, axis: int) -> numpy.ndarray:
    top = x.max(axis=axis, keepdims=True)
    return numpy.squeeze(numpy.log(numpy.exp(x - top).sum(axis=axis, keepdims=True)) + top, axis=axis)


def span_log_probs(
    emissions: numpy.ndarray,
    mask: numpy.ndarray,
    transitions: numpy.ndarray,
    end_scores: numpy.ndarray,
    passes: Passes,
    spans: numpy.ndarray,
    patterns: numpy.ndarray,
    max_length: int,
) -> numpy.ndarray:
    """log P(span | x) of given spans (row, start, end inclusive, type),
    NEG_INF for a span that does not fit its row or is longer than
    max_length (spacy_crf.nn.spans.span_log_probs)."""
    _, T, K = emissions.shape
    N = spans.shape[0]
    if N == 0 or T == 0:
        return numpy.full((N,), NEG_INF, dtype=numpy.float32)
    alphas, betas, log_z = passes
    row, first, last, kind = (spans[:, i] for i in range(4))
    lengths = mask.sum(1)[row]
    size = last - first + 1
    fits = (first >= 0) & (size >= 1) & (last < lengths)
    width = max(1, min(max_length, T))
    fits &= size <= width
    first = first.clip(0, T - 1)
    size = numpy.where(fits, size, 1).clip(max=width)
    pattern = patterns[kind]
    offsets = numpy.arange(width)
    inside = offsets < size[:, None]
    labels = numpy.repeat(pattern[:, MIDDLE, None], width, axis=1)
    is_last = offsets == (size - 1)[:, None]
    labels = numpy.where(is_last, pattern[:, LAST, None], labels)
    labels[:, 0] = numpy.where(size == 1, pattern[:, SINGLE], pattern[:, FIRST])
    possible = fits & ((labels >= 0) | ~inside).all(1)
    labels = labels.clip(min=0)
    positions = (first[:, None] + offsets).clip(max=T - 1)
    total = alphas[row, first, labels[:, 0]]
    if width > 1:
        steps = emissions[row[:, None], positions[:, 1:], labels[:, 1:]]
        steps = steps + transitions[labels[:, :-1], labels[:, 1:]]
        total = total + numpy.where(inside[:, 1:], steps, 0.0).sum(1, dtype=numpy.float32)
    label = numpy.take_along_axis(labels, (size - 1)[:, None], axis=1)[:, 0]
    end = first + size - 1
    exit_scores = betas[row, end, label]
    not_after = pattern[:, NOT_AFTER]
    at_end = end + 1 >= lengths
    following = (end + 1).clip(max=T - 1)
    nxt = transitions[label] + emissions[row, following] + betas[row, following]
    nxt = numpy.where(numpy.arange(K) == not_after[:, None], numpy.float32(NEG_INF), nxt)
    excluded = numpy.where(at_end, end_scores[label], _logsumexp(nxt, axis=1))
    exit_scores = numpy.where(not_after >= 0, excluded, exit_scores)
    log_probs = (total + exit_scores - log_z[row]).clip(NEG_INF, 0.0)
    return numpy.where(possible, log_probs, NEG_INF).astype(numpy.float32)


def all_span_log_probs(
    emissions: numpy.ndarray,
    mask: numpy.ndarray,
    transitions: numpy.ndarray,
    end_scores: numpy.ndarray,
    passes: Passes,
    patterns: numpy.ndarray,
    max_length: Optional[int],
    min_log_prob: float,
) -> numpy.ndarray:
    """log P(span | x) of every span of every type, by length, stopping
    where no longer span can reach min_log_prob
    (spacy_crf.nn.spans.all_span_log_probs).

    RETURNS (numpy.ndarray): (B, T, L, n_types), L the lengths computed.
    """
    B, T, _ = emissions.shape
    n_types = patterns.shape[0]
    max_length = max(T, 1) if max_length is None else max_length
    if T == 0 or n_types == 0:
        return numpy.full((B, T, 0, n_types), NEG_INF, dtype=numpy.float32)
    alphas, betas, log_z = passes
    lengths = mask.sum(1)
    positions = numpy.arange(T)
    single, first, middle, last, not_after = (patterns[:, i] for i in range(5))
    has = [x >= 0 for x in (single, first, middle, last)]
    single, first, middle, last = (x.clip(min=0) for x in (single, first, middle, last))
    log_z = log_z[:, None, None]
    neg = numpy.float32(NEG_INF)
    exits = _exit_scores(
        emissions, mask, transitions, end_scores, betas, numpy.concatenate([single, last]), numpy.tile(not_after, 2)
    )
    exit_single, exit_last = exits[:, :, :n_types], exits[:, :, n_types:]
    emit_middle = emissions[:, :, middle]
    emit_last = emissions[:, :, last]
    chain = alphas[:, :, first]
    to_last = (transitions[first, last], transitions[middle, last])
    to_middle = (transitions[first, middle], transitions[middle, middle])
    valid_chain = has[FIRST] & has[MIDDLE]

    def close(log_probs: numpy.ndarray, size: int, valid: numpy.ndarray) -> numpy.ndarray:
        fits = positions[: T - size + 1] + (size - 1) < lengths[:, None]
        keep = fits[:, :, None] & valid
        log_probs = numpy.where(keep, log_probs.clip(NEG_INF, 0.0), neg).astype(numpy.float32)
        return numpy.concatenate([log_probs, numpy.full((B, size - 1, n_types), neg, dtype=numpy.float32)], axis=1)

    def can_grow(chain: numpy.ndarray, size: int, valid: numpy.ndarray) -> bool:
        ends = size - 1 + positions[: T - size + 1]
        label = first if size == 1 else middle
        bound = chain + betas[:, ends][:, :, label] - log_z
        room = (ends + 1 < lengths[:, None])[:, :, None] & valid
        return bool((room & (bound >= min_log_prob)).any())

    out = [close(alphas[:, :, single] + exit_single - log_z, 1, has[SINGLE])]
    grow = can_grow(chain, 1, has[FIRST])
    for size in range(2, min(max_length, T) + 1):
        if not grow:
            break
        n = T - size + 1
        chain = chain[:, :n]
        hop = 0 if size == 2 else 1
        closed = chain + to_last[hop] + emit_last[:, size - 1 :] + exit_last[:, size - 1 :] - log_z
        out.append(close(closed, size, has[FIRST] & has[LAST] & (valid_chain | (size == 2))))
        chain = chain + to_middle[hop] + emit_middle[:, size - 1 :]
        grow = can_grow(chain, size, valid_chain)
    return numpy.stack(out, axis=2)


def _exit_scores(
    emissions: numpy.ndarray,
    mask: numpy.ndarray,
    transitions: numpy.ndarray,
    end: numpy.ndarray,
    betas: numpy.ndarray,
    labels: numpy.ndarray,
    not_after: numpy.ndarray,
) -> numpy.ndarray:
    """exit_t(l) for pairs (label l, label that must not follow or -1), (B, T, P)."""
    B, T, K = emissions.shape
    plain = betas[:, :, labels]
    if T == 1:
        return plain
    shift = transitions.max()
    excluded = numpy.arange(K)[:, None] == not_after
    weights = numpy.where(excluded, numpy.float32(0.0), numpy.exp(transitions[labels].T - shift))
    following = emissions[:, 1:] + betas[:, 1:]
    top = following.max(axis=2, keepdims=True)
    summed = numpy.exp(following - top) @ weights
    logged = numpy.log(numpy.maximum(summed, numpy.finfo(numpy.float32).tiny)) + top + shift
    logged = numpy.where(summed > 0, logged, numpy.float32(NEG_INF))
    inner = numpy.where(mask[:, 1:, None], logged, numpy.broadcast_to(end[labels], logged.shape))
    after = numpy.concatenate([inner, numpy.broadcast_to(end[labels], (B, 1, len(labels)))], axis=1)
    return numpy.where(not_after >= 0, after, plain).astype(numpy.float32)
