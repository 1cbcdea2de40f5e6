"""Exact posterior probabilities of entity spans under a linear-chain CRF.

Pure torch, no spaCy. An entity type is a pattern of label ids, one row of a
small long tensor:

    patterns    # shape: (n_types, 5)  (single, first, middle, last, not_after)

and the span of tokens i..j (inclusive) is one entity of that type on the tag
paths y with

    j == i:  y_i = single
    j >  i:  y_i = first, y_t = middle for i < t < j, y_j = last

and, where not_after >= 0, y_(j+1) != not_after (or j is the last token). A
label id of -1 means the type has no such label: the spans that need it have
probability 0. `spacy_crf.targets.span_patterns` builds the patterns of a tag
scheme (BILUO: U, B, I, L, none; IOBES: S, B, I, E, none; BIO/IOB2: B, B, I,
I, I).

P(span | x), the sum of P(y | x) over those paths, comes from the forward and
backward scores of `crf.py` (the recursion of `log_partition`):

    log P = alpha_i(first) + sum_{t=i+1..j} (trans[y(t-1), yt] + emit[t, yt])
            + exit_j(last) - log Z(x)

with y the span's labels, and exit_j(l) the log-sum over every continuation
after label l at token j: beta_j(l), or, with a label that must not follow,
log sum_{k != not_after} exp(trans[l, k] + emit[j+1, k] + beta_(j+1)(k)) (just
end[l] at the last token). Constraints need nothing special: a forbidden
transition, start or end is NEG_INF in the scores already, and so a span on
forbidden paths only gets probability exactly 0.

Padded batches follow crf.py: emissions (B, T, K), a bool mask (B, T) of
left-aligned real tokens; a row of length 0 has no spans. float64 in gives
float64 out, anything else float32. Log probabilities are clamped to
[NEG_INF, 0]; NEG_INF stands for log 0.
"""

from typing import Optional, Tuple

import torch

from . import factored
from .crf import (
    NEG_INF,
    CRFScores,
    _compute_dtype,
    backward_scores,
    check_scores,
    forward_scores,
)

# the columns of a pattern
SINGLE, FIRST, MIDDLE, LAST, NOT_AFTER = range(5)


def forward_backward(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The forward and backward log-scores of every token and label, and log Z.

    alphas[b, t, k] is the log-sum of the scores of every prefix y1..yt with
    yt = k (emissions up to t included); betas[b, t, k] that of every
    continuation after label k at token t (emissions after t, end included),
    so alphas + betas - log Z are the log marginals. Padded steps carry the
    values of the last real token (alphas) or of the end (betas).

    RETURNS (Tuple[Tensor, Tensor, Tensor]): alphas (B, T, K), betas (B, T, K)
        and log Z (B,) (0 for a row of length 0), in the compute dtype.
    """
    check_scores(scores)
    if scores.classes is not None:
        return factored.forward_backward(scores)
    emissions, mask, transitions, start, end, _ = _as_compute_dtype(scores)
    B, T, K = emissions.shape
    if T == 0:
        empty = emissions.new_zeros(B, 0, K)
        return empty, empty.clone(), emissions.new_zeros(B)
    alphas = forward_scores(emissions, mask, transitions, start)  # shape: (B, T, K)
    betas = backward_scores(emissions, mask, transitions, end)  # shape: (B, T, K)
    log_z = torch.logsumexp(alphas[:, -1] + end, dim=1)  # shape: (B,)
    return alphas, betas, torch.where(mask[:, 0], log_z, torch.zeros_like(log_z))


def span_log_probs(
    scores: CRFScores,
    spans: torch.Tensor,
    patterns: torch.Tensor,
    *,
    max_length: Optional[int] = None,
    passes: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """log P(span | x) of given spans.

    spans (Tensor): (N, 4) long, (row, start, end, type) with `end` inclusive
        and `type` a row of `patterns`; rows and types must be in range. A
        span that does not lie within its row's real tokens (start < 0,
        end < start or end >= the row's length) gets NEG_INF.
    patterns (Tensor): (n_types, 5) long label ids (single, first, middle,
        last, not_after), -1 for none; see the module docstring.
    max_length (Optional[int]): the longest span (end - start + 1) to
        score, longer ones get NEG_INF; None reads it from `spans` (a host
        sync). The cost is O(N * max_length) after the forward-backward pass.
    passes (Optional[Tuple[Tensor, Tensor, Tensor]]): `forward_backward(scores)`
        if already computed (it is the main cost); None computes it.
    RETURNS (Tensor): (N,) log probabilities, in the compute dtype.
    """
    check_scores(scores)
    _check_patterns(patterns)
    if spans.dim() != 2 or spans.shape[1] != 4:
        raise ValueError(f"spans must be (N, 4), got {tuple(spans.shape)}")
    scores = _as_compute_dtype(scores)
    emissions, mask, transitions, _, end_scores, _ = scores
    _, T, K = emissions.shape
    N = spans.shape[0]
    if N == 0 or T == 0:
        return emissions.new_full((N,), NEG_INF)
    alphas, betas, log_z = forward_backward(scores) if passes is None else passes
    spans = spans.to(emissions.device)
    patterns = patterns.to(emissions.device)
    row, first, last, kind = spans.unbind(1)  # shape: (N,) each
    lengths = mask.sum(1)[row]  # shape: (N,)
    size = last - first + 1  # shape: (N,)
    fits = (first >= 0) & (size >= 1) & (last < lengths)
    if max_length is None:
        max_length = int(size.clamp(1, T).max())
    width = max(1, min(max_length, T))
    fits &= size <= width
    first = first.clamp(0, T - 1)
    size = torch.where(fits, size, torch.ones_like(size)).clamp(max=width)
    pattern = patterns[kind]  # shape: (N, 5)
    # the span's label at each offset: single, or first, middle..., last
    offsets = torch.arange(width, device=emissions.device)  # shape: (W,)
    inside = offsets < size[:, None]  # shape: (N, W)
    labels = pattern[:, MIDDLE, None].expand(N, width).clone()
    is_last = offsets == (size - 1)[:, None]
    labels = torch.where(is_last, pattern[:, LAST, None], labels)
    head = torch.where(size == 1, pattern[:, SINGLE], pattern[:, FIRST])  # shape: (N,)
    labels[:, 0] = head
    possible = fits & ((labels >= 0) | ~inside).all(1)
    labels = labels.clamp(min=0)
    positions = (first[:, None] + offsets).clamp(max=T - 1)  # shape: (N, W)
    total = alphas[row, first, labels[:, 0]]  # shape: (N,)
    if width > 1:
        steps = emissions[row[:, None], positions[:, 1:], labels[:, 1:]]  # shape: (N, W-1)
        steps = steps + transitions[labels[:, :-1], labels[:, 1:]]
        total = total + torch.where(inside[:, 1:], steps, torch.zeros_like(steps)).sum(1)
    label = labels.gather(1, (size - 1)[:, None]).squeeze(1)  # shape: (N,)
    end = first + size - 1
    exit_scores = betas[row, end, label]
    not_after = pattern[:, NOT_AFTER]
    at_end = end + 1 >= lengths
    following = (end + 1).clamp(max=T - 1)
    # every continuation but the ones whose next label is `not_after`
    nxt = transitions[label] + emissions[row, following] + betas[row, following]  # shape: (N, K)
    nxt = nxt.masked_fill(torch.arange(K, device=nxt.device) == not_after[:, None], NEG_INF)
    excluded = torch.where(at_end, end_scores[label], torch.logsumexp(nxt, dim=1))
    exit_scores = torch.where(not_after >= 0, excluded, exit_scores)
    log_probs = (total + exit_scores - log_z[row]).clamp(NEG_INF, 0.0)
    return torch.where(possible, log_probs, torch.full_like(log_probs, NEG_INF))


def all_span_log_probs(
    scores: CRFScores,
    patterns: torch.Tensor,
    max_length: Optional[int],
    *,
    min_log_prob: Optional[float] = None,
    passes: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """log P(span | x) of every span of every type up to max_length tokens.

    One pass per length, each vectorised over (B, T, n_types): for the spans
    of length L starting at every token, the chain first, middle... of the
    spans of length L - 1 is extended by one token, and closed with `last`
    and the exit score. O(max_length * B * T * n_types) after the
    forward-backward pass, plus one (B * T, K) by (K, 2 * n_types) product for
    the exits with a label that must not follow.

    patterns (Tensor): (n_types, 5) long; see the module docstring.
    max_length (Optional[int]): the longest span, >= 1; None: up to T (with
        min_log_prob only, or it costs O(T^2)).
    min_log_prob (Optional[float]): stop early, exactly: after length L, if
        no chain first, middle... of L tokens has log probability >= this
        (an upper bound of every longer span's), no longer span can reach it
        and the loop stops. The result's third dimension is then the number
        of lengths computed. Each length costs a host sync.
    passes (Optional[Tuple[Tensor, Tensor, Tensor]]): `forward_backward(scores)`
        if already computed (it is the main cost); None computes it.
    RETURNS (Tensor): (B, T, L, n_types): [b, i, L - 1, x] is the log
        probability of tokens i..i+L-1 of row b forming one entity of type
        x, NEG_INF where the span does not fit in the row.
    """
    check_scores(scores)
    _check_patterns(patterns)
    scores = _as_compute_dtype(scores)
    emissions, mask, transitions, _, _, _ = scores
    B, T, _ = emissions.shape
    n_types = patterns.shape[0]
    if max_length is None:
        if min_log_prob is None:
            raise ValueError("all_span_log_probs needs max_length, min_log_prob or both")
        max_length = max(T, 1)
    elif max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    if T == 0 or n_types == 0:
        depth = 0 if min_log_prob is not None else max_length
        return emissions.new_full((B, T, depth, n_types), NEG_INF)
    patterns = patterns.to(emissions.device)
    alphas, betas, log_z = forward_backward(scores) if passes is None else passes
    lengths = mask.sum(1)  # shape: (B,)
    positions = torch.arange(T, device=emissions.device)  # shape: (T,)
    single, first, middle, last, not_after = patterns.unbind(1)  # shape: (n_types,) each
    has = [x >= 0 for x in (single, first, middle, last)]
    single, first, middle, last = (x.clamp(min=0) for x in (single, first, middle, last))
    log_z = log_z[:, None, None]  # shape: (B, 1, 1)
    neg = torch.tensor(NEG_INF, dtype=emissions.dtype, device=emissions.device)

    exits = _exit_scores(scores, betas, torch.cat([single, last]), not_after.repeat(2))
    exit_single, exit_last = exits.split(n_types, dim=2)  # shape: (B, T, n_types) each
    emit_middle = emissions[:, :, middle]  # shape: (B, T, n_types)
    emit_last = emissions[:, :, last]
    # one chain per start token: first, middle... on tokens i..i+L-1
    chain = alphas[:, :, first]  # shape: (B, T, n_types)
    to_last = (transitions[first, last], transitions[middle, last])
    to_middle = (transitions[first, middle], transitions[middle, middle])
    valid_chain = has[FIRST] & has[MIDDLE]

    def close(log_probs: torch.Tensor, size: int, valid: torch.Tensor) -> torch.Tensor:
        """Clamp, and NEG_INF where the span cannot be or does not fit."""
        fits = positions[: T - size + 1] + (size - 1) < lengths[:, None]  # shape: (B, T-L+1)
        keep = fits[:, :, None] & valid
        log_probs = torch.where(keep, log_probs.clamp(NEG_INF, 0.0), neg)
        return torch.cat([log_probs, neg.expand(B, size - 1, n_types)], dim=1)

    def can_grow(chain: torch.Tensor, size: int, valid: torch.Tensor, floor: float) -> bool:
        """Whether a span longer than `size` may reach `floor` (min_log_prob): the
        chain's own probability bounds those of all its continuations."""
        ends = size - 1 + positions[: T - size + 1]
        label = first if size == 1 else middle
        bound = chain + betas[:, ends][:, :, label] - log_z  # shape: (B, T-L+1, n_types)
        room = (ends + 1 < lengths[:, None])[:, :, None] & valid
        return bool((room & (bound >= floor)).any())

    out = [close(alphas[:, :, single] + exit_single - log_z, 1, has[SINGLE])]
    grow = min_log_prob is None or can_grow(chain, 1, has[FIRST], min_log_prob)
    for size in range(2, min(max_length, T) + 1):
        if not grow:
            break
        n = T - size + 1
        chain = chain[:, :n]  # the chain of size - 1 tokens at starts 0..n-1
        hop = 0 if size == 2 else 1
        closed = chain + to_last[hop] + emit_last[:, size - 1 :] + exit_last[:, size - 1 :] - log_z
        out.append(close(closed, size, has[FIRST] & has[LAST] & (valid_chain | (size == 2))))
        chain = chain + to_middle[hop] + emit_middle[:, size - 1 :]
        grow = min_log_prob is None or can_grow(chain, size, valid_chain, min_log_prob)
    if min_log_prob is None and len(out) < max_length:
        out.extend(neg.expand(B, T, n_types) for _ in range(max_length - len(out)))
    return torch.stack(out, dim=2)


def _exit_scores(scores: CRFScores, betas: torch.Tensor, labels: torch.Tensor, not_after: torch.Tensor) -> torch.Tensor:
    """exit_t(l) for pairs (label l, label that must not follow or -1).

    labels (Tensor): (P,) label ids. not_after (Tensor): (P,), -1 for none.
    RETURNS (Tensor): (B, T, P): beta_t(l) where not_after is -1; else the
        log-sum over the continuations whose next label is not not_after
        (end[l] at a row's last token).
    """
    emissions, mask, transitions, _, end, _ = scores
    B, T, K = emissions.shape
    plain = betas[:, :, labels]  # shape: (B, T, P)
    if T == 1:
        return plain
    shift = transitions.max()
    # weights[k, p] = exp(trans[l_p, k]) unless k is the excluded label
    excluded = torch.arange(K, device=labels.device)[:, None] == not_after  # shape: (K, P)
    weights = torch.exp(transitions[labels].t() - shift).masked_fill(excluded, 0.0)
    following = emissions[:, 1:] + betas[:, 1:]  # shape: (B, T-1, K)
    top = following.amax(dim=2, keepdim=True)
    summed = torch.exp(following - top) @ weights  # shape: (B, T-1, P)
    logged = torch.log(summed.clamp_min(torch.finfo(summed.dtype).tiny)) + top + shift
    logged = torch.where(summed > 0, logged, torch.full_like(logged, NEG_INF))
    # at a row's last real token (next step padded or past T) only `end` follows
    inner = torch.where(mask[:, 1:, None], logged, end[labels].expand_as(logged))
    after = torch.cat([inner, end[labels].expand(B, 1, -1)], dim=1)  # shape: (B, T, P)
    return torch.where(not_after >= 0, after, plain)


def _as_compute_dtype(scores: CRFScores) -> CRFScores:
    emissions, mask, transitions, start, end, classes = scores
    dtype = _compute_dtype(emissions)
    return CRFScores(emissions.to(dtype), mask, transitions.to(dtype), start.to(dtype), end.to(dtype), classes)


def _check_patterns(patterns: torch.Tensor) -> None:
    """Raise ValueError naming the shape if the patterns are not (n_types, 5)."""
    if patterns.dim() != 2 or patterns.shape[1] != 5:
        raise ValueError(f"patterns must be (n_types, 5), got {tuple(patterns.shape)}")
    if patterns.dtype != torch.long:
        raise ValueError(f"patterns must be a long tensor, got {patterns.dtype}")
