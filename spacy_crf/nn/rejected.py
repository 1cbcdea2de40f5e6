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

The subtractions run in float64 as shares of the mass they leave
(alpha' + log(1 - share)); where less than 1e-12 of a label's mass would
remain it is taken as exactly 0 (the known labels force the rejected span:
contradictory annotations the caller should drop). What happens to which span
at which step is scheduled once, as index tensors on the device; each step
then updates every span at once. Cost O(T * K * K) per row with rejected
spans; rows without any use crf.py's code.
"""

from typing import Dict, List, Optional, Set, Tuple

import torch

from .crf import NEG_INF, CRFScores, check_allowed, check_scores
from .spans import FIRST, LAST, MIDDLE, NOT_AFTER, SINGLE, _check_patterns


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
    emit = emissions.to(dtype).masked_fill(~allowed, NEG_INF)
    trans, start, end = transitions.to(dtype), start.to(dtype), end.to(dtype)
    lengths = mask.sum(1).tolist()
    events = _Schedule(_usable(spans.cpu(), patterns.cpu(), lengths), lengths, emissions.device)
    mass = emit.new_full((events.n_spans,), NEG_INF)  # log mass of the prefixes running through each span
    alpha = start + emit[:, 0]  # shape: (B, K)
    for t in range(T):
        if t > 0:
            step = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emit[:, t]
            alpha = torch.where(mask[:, t, None], step, alpha)
            # BIO: spans whose last token was t - 1 complete now unless not_after follows
            bio = events.at("bio", t)
            if bio is not None:
                ids, rows, labels, not_after = bio
                completed = mass[ids, None] + trans[labels] + emit[rows, t]  # shape: (n, K)
                completed = completed.scatter(1, not_after[:, None], NEG_INF)
                share = torch.exp(completed - alpha[rows])
                alpha = _remove(alpha, alpha.new_zeros(B, K).index_add(0, rows, share))
        # the prefixes running through each span, up to t
        starting = events.at("start", t)
        if starting is not None:
            ids, rows, labels = starting
            mass = mass.index_put((ids,), alpha[rows, labels])
        growing = events.at("grow", t)
        if growing is not None:
            ids, rows, previous, labels = growing
            mass = mass.index_put((ids,), mass[ids] + trans[previous, labels] + emit[rows, t, labels])
        # BILUO / IOBES: spans complete at their last token
        ending = events.at("last", t)
        if ending is not None:
            ids, rows, labels = ending
            share = torch.exp(mass[ids] - alpha[rows, labels])
            ratio = alpha.new_zeros(B, K).index_put((rows, labels), share, accumulate=True)
            alpha = _remove(alpha, ratio)
    total = torch.logsumexp(alpha + end, dim=1)  # shape: (B,)
    # BIO: spans that end at their row's last token complete at the end
    final = events.at("final", 0)
    if final is not None:
        ids, rows, labels = final
        share = torch.exp(mass[ids] + end[labels] - total[rows])
        total = _remove(total, total.new_zeros(B).index_add(0, rows, share))
    return torch.where(mask[:, 0], total, torch.zeros_like(total))


def _remove(log_mass: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    """log(exp(log_mass) * (1 - ratio)): the mass less a share of it; exactly
    log 0 (NEG_INF) where less than 1e-12 of it would remain."""
    safe = ratio < 1.0 - 1e-12
    kept = log_mass + torch.log1p(-torch.where(safe, ratio, torch.zeros_like(ratio)))
    return torch.where(safe, kept, torch.full_like(log_mass, NEG_INF))


class _Schedule:
    """What happens to the rejected spans at each step, as index tensors made
    on the device once, before the recursion: "start" (a span's first token:
    its mass begins), "grow" (a later token of it), "last" (BILUO/IOBES: it
    completes), "bio" (BIO/IOB2: it completes at the next token) and "final"
    (BIO: it ends at its row's last token). `at(kind, t)` slices them."""

    def __init__(
        self, kept: Dict[int, Tuple[int, int, int, List[int]]], lengths: List[int], device: torch.device
    ) -> None:
        self.n_spans = len(kept)
        rows_of: Dict[str, List[Tuple[int, ...]]] = {kind: [] for kind in ("start", "grow", "last", "bio", "final")}
        for index, (row, first, last, pattern) in enumerate(kept.values()):
            rows_of["start"].append((first, index, row, _label(pattern, first, last, first)))
            for t in range(first + 1, last + 1):
                rows_of["grow"].append(
                    (t, index, row, _label(pattern, first, last, t - 1), _label(pattern, first, last, t))
                )
            label = _label(pattern, first, last, last)
            if pattern[NOT_AFTER] < 0:
                rows_of["last"].append((last, index, row, label))
            elif last + 1 < lengths[row]:
                rows_of["bio"].append((last + 1, index, row, label, pattern[NOT_AFTER]))
            else:
                rows_of["final"].append((0, index, row, label))
        self._columns: Dict[str, Tuple[torch.Tensor, ...]] = {}
        self._where: Dict[str, Dict[int, Tuple[int, int]]] = {}
        for kind, entries in rows_of.items():
            entries.sort()
            if entries:
                table = torch.tensor([entry[1:] for entry in entries], dtype=torch.long, device=device)
                self._columns[kind] = tuple(table.unbind(1))
            where: Dict[int, Tuple[int, int]] = {}
            for i, entry in enumerate(entries):
                lo, _ = where.get(entry[0], (i, i))
                where[entry[0]] = (lo, i + 1)
            self._where[kind] = where

    def at(self, kind: str, t: int) -> Optional[Tuple[torch.Tensor, ...]]:
        """The columns (span index, row, labels...) of the events of a kind at
        step t; None where there are none."""
        span = self._where[kind].get(t)
        if span is None:
            return None
        lo, hi = span
        return tuple(column[lo:hi] for column in self._columns[kind])


def _usable(
    spans: torch.Tensor, patterns: torch.Tensor, lengths: List[int]
) -> Dict[int, Tuple[int, int, int, List[int]]]:
    """The distinct spans that lie on some path: {index: (row, first, last, pattern)}."""
    kept: Dict[int, Tuple[int, int, int, List[int]]] = {}
    seen: Set[Tuple[int, int, int, int]] = set()
    for s, (row, first, last, kind) in enumerate(spans.tolist()):
        key = (row, first, last, kind)
        if key in seen or not (0 <= row < len(lengths)) or not (0 <= first <= last < lengths[row]):
            continue
        if not 0 <= kind < patterns.shape[0]:
            raise ValueError(f"span type {kind} is not a row of the {patterns.shape[0]} patterns")
        pattern = [int(label) for label in patterns[kind].tolist()]
        needed = (
            [pattern[SINGLE]]
            if first == last
            else [pattern[FIRST], pattern[LAST]] + ([pattern[MIDDLE]] if last > first + 1 else [])
        )
        if min(needed) < 0:
            continue
        seen.add(key)
        kept[s] = (row, first, last, pattern)
    return kept


def _label(pattern: List[int], first: int, last: int, t: int) -> int:
    """The span's label at token t."""
    if first == last:
        return pattern[SINGLE]
    if t == first:
        return pattern[FIRST]
    return pattern[LAST] if t == last else pattern[MIDDLE]
