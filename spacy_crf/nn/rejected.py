"""The partial-label likelihood without rejected entity spans.

Pure torch, no spaCy. An annotator's "reject" says that a span of tokens is
not an entity of some type (spaCy's `incorrect_spans_key`). The training loss
then sums over the paths that agree with the known labels and contain none of
the rejected spans:

    NLL = log Z(x) - log sum_{y allowed, no rejected span in y} exp Score(x, y)

A span (i, j, type) is "in" a path as in spans.py (the pattern rows: single,
first, middle, last, not_after). `log_partition_without` computes the second
term exactly by the forward algorithm, removing at each step the mass of the
prefixes that have just completed a rejected span:

    alpha'_t(y) = [usual recursion from alpha'_(t-1)] - completed_t(y)

A prefix that contains a rejected span completed before t was removed when it
was completed, so each path is removed once. The mass of the prefixes that
run through a span up to token t, m_t, starts at its first token from
alpha'_i(first label) (prefixes that completed no rejected span before it:
no other rejected span can complete inside it, whose labels are first/middle)
and grows along the span's labels. Under BILUO/IOBES a span completes at its
last token (subtract m_j from alpha'_j(last)); under BIO/IOB2 when the next
label is not `not_after` (subtract m_j + trans[last, y] + emit_(j+1)(y) from
alpha'_(j+1)(y) for every y != not_after, or m_j + end[last] from the total
when j is the last token).

The subtractions run in log space in float64 (log(exp(a) - exp(b))); where
less than 1e-12 of a label's mass would remain it is taken as exactly 0 (the
known labels force the rejected span: contradictory annotations the caller
should drop). Cost O(T * K * K) per row with rejected spans, plus O(1) per
span and token; rows without any use crf.py's code.
"""

import torch

from .crf import NEG_INF, CRFScores, check_allowed, check_scores
from .spans import FIRST, LAST, MIDDLE, NOT_AFTER, SINGLE, _check_patterns


def _log_sub(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """log(exp(a) - exp(b)) for b <= a, NEG_INF where b is within 1e-12 of a."""
    d = b - a
    safe = d < -1e-12
    out = a + torch.log(-torch.expm1(torch.where(safe, d, torch.full_like(d, -1.0))))
    return torch.where(safe, out, torch.full_like(a, NEG_INF))


def log_partition_without(
    scores: CRFScores,
    allowed: torch.Tensor,
    spans: torch.Tensor,
    patterns: torch.Tensor,
) -> torch.Tensor:
    """log sum exp Score(x, y) over the paths y that take only allowed labels
    and contain none of the given spans, with its gradient (autograd).

    allowed (Tensor): (B, T, K) bool, the labels each token may take.
    spans (Tensor): (N, 4) long rows (row, first, last, type): the rejected
        spans, token offsets inclusive, `type` a row of `patterns`. Spans
        outside their row's real tokens, or whose pattern lacks a label they
        need, are on no path and change nothing; duplicates count once.
    patterns (Tensor): (n_types, 5) long, as in spans.py.
    RETURNS (Tensor): (B,) float64; 0 for a row of length 0.
    """
    check_scores(scores)
    check_allowed(scores, allowed)
    _check_patterns(patterns)
    if spans.dim() != 2 or spans.shape[1] != 4:
        raise ValueError(f"spans must be (N, 4), got {tuple(spans.shape)}")
    emissions, mask, transitions, start, end, _ = scores
    dtype = torch.float64
    B, T, K = emissions.shape
    if T == 0:
        return emissions.new_zeros(B, dtype=dtype)
    device = emissions.device
    emit = emissions.to(dtype).masked_fill(~allowed, NEG_INF)
    trans, start, end = transitions.to(dtype), start.to(dtype), end.to(dtype)
    lengths = mask.sum(1).tolist()
    kept = _usable(spans.cpu(), patterns.cpu(), lengths)
    alpha = start + emit[:, 0]  # shape: (B, K)
    mass = {}  # span index -> log mass of the prefixes running through it so far
    for t in range(T):
        if t > 0:
            step = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emit[:, t]
            alpha = torch.where(mask[:, t, None], step, alpha)
            # BIO: spans whose last token was t - 1 complete now unless not_after follows
            removed = alpha.new_full((B, K), NEG_INF)
            for s, (row, first, last, pattern) in kept.items():
                if last == t - 1 and pattern[NOT_AFTER] >= 0 and t < lengths[row]:
                    label = _label(pattern, first, last, last)
                    completed = mass[s] + trans[label] + emit[row, t]
                    completed = completed.index_fill(0, torch.tensor([pattern[NOT_AFTER]], device=device), NEG_INF)
                    removed = removed.index_put((torch.tensor([row], device=device),), torch.logaddexp(removed[row], completed).unsqueeze(0))
            alpha = _log_sub(alpha, removed)
        # the prefixes running through each span, up to t
        for s, (row, first, last, pattern) in kept.items():
            if first == t:
                mass[s] = alpha[row, _label(pattern, first, last, t)]
            elif first < t <= last:
                previous, label = _label(pattern, first, last, t - 1), _label(pattern, first, last, t)
                mass[s] = mass[s] + trans[previous, label] + emit[row, t, label]
        # BILUO / IOBES: spans complete at their last token
        removed = alpha.new_full((B, K), NEG_INF)
        for s, (row, first, last, pattern) in kept.items():
            if last == t and pattern[NOT_AFTER] < 0:
                label = _label(pattern, first, last, t)
                removed = removed.index_put(
                    (torch.tensor([row], device=device), torch.tensor([label], device=device)),
                    torch.logaddexp(removed[row, label], mass[s]).reshape(1),
                )
        if any(last == t and pattern[NOT_AFTER] < 0 for _, _, last, pattern in kept.values()):
            alpha = _log_sub(alpha, removed)
    total = torch.logsumexp(alpha + end, dim=1)  # shape: (B,)
    # BIO: spans that end at their row's last token complete at the end
    removed = total.new_full((B,), NEG_INF)
    for s, (row, first, last, pattern) in kept.items():
        if pattern[NOT_AFTER] >= 0 and last == lengths[row] - 1:
            label = _label(pattern, first, last, last)
            removed = removed.index_put((torch.tensor([row], device=device),), torch.logaddexp(removed[row], mass[s] + end[label]).reshape(1))
    total = _log_sub(total, removed)
    return torch.where(mask[:, 0], total, torch.zeros_like(total))


def _usable(spans: torch.Tensor, patterns: torch.Tensor, lengths) -> dict:
    """The distinct spans that lie on some path: {index: (row, first, last, pattern)}."""
    kept, seen = {}, set()
    for s, (row, first, last, kind) in enumerate(spans.tolist()):
        key = (row, first, last, kind)
        if key in seen or not (0 <= row < len(lengths)) or not (0 <= first <= last < lengths[row]):
            continue
        if not 0 <= kind < patterns.shape[0]:
            raise ValueError(f"span type {kind} is not a row of the {patterns.shape[0]} patterns")
        pattern = patterns[kind].tolist()
        needed = [pattern[SINGLE]] if first == last else [pattern[FIRST], pattern[LAST]] + ([pattern[MIDDLE]] if last > first + 1 else [])
        if min(needed) < 0:
            continue
        seen.add(key)
        kept[s] = (row, first, last, pattern)
    return kept


def _label(pattern, first: int, last: int, t: int) -> int:
    """The span's label at token t."""
    if first == last:
        return pattern[SINGLE]
    if t == first:
        return pattern[FIRST]
    return pattern[LAST] if t == last else pattern[MIDDLE]
