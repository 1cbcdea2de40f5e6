"""Linear-chain CRF maths in PyTorch: scores, log-partition, NLL and Viterbi.

Pure torch, no spaCy. Every function works on a padded batch:

    emissions   # shape: (B, T, K)  per-token label scores
    mask        # shape: (B, T)     bool, True on real tokens, left-aligned
    transitions # shape: (K, K)     transitions[i, j] scores label i -> label j
    start       # shape: (K,)       score of the first label
    end         # shape: (K,)       score of the last label

A sequence of length 0 (its mask row all False) has log-partition 0, NLL 0 and
an empty path. Computation runs in float32 or wider, whatever the input dtype.
"""
from typing import NamedTuple, Optional, Tuple

import torch

# Stands in for log(0). Finite, so that logsumexp never meets a row of -inf
# (whose gradient is NaN); exp(NEG_INF - x) is exactly 0 for any sane score.
NEG_INF = -1e9


class CRFScores(NamedTuple):
    """Everything the CRF needs for one padded batch."""

    emissions: torch.Tensor  # shape: (B, T, K)
    mask: torch.Tensor  # shape: (B, T), bool
    transitions: torch.Tensor  # shape: (K, K)
    start: torch.Tensor  # shape: (K,)
    end: torch.Tensor  # shape: (K,)


def check_scores(scores: CRFScores) -> None:
    """Raise ValueError naming the shapes if the tensors do not fit together."""
    emissions, mask, transitions, start, end = scores
    if emissions.dim() != 3:
        raise ValueError(f"emissions must be (B, T, K), got {tuple(emissions.shape)}")
    B, T, K = emissions.shape
    if tuple(mask.shape) != (B, T) or mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a bool tensor of shape {(B, T)}, "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )
    if tuple(transitions.shape) != (K, K):
        raise ValueError(
            f"transitions must be {(K, K)}, got {tuple(transitions.shape)}"
        )
    if tuple(start.shape) != (K,) or tuple(end.shape) != (K,):
        raise ValueError(
            f"start and end must be {(K,)}, got {tuple(start.shape)} and "
            f"{tuple(end.shape)}"
        )


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def allowed_from_tags(
    tags: torch.Tensor, n_labels: int, *, excluded: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Turn gold label ids into the set of labels each token may take.

    tags (Tensor): (B, T) long; a label id, or -1 where the gold label is unknown.
    n_labels (int): K, the number of labels.
    excluded (Optional[Tensor]): (B, T) long; a label id the token must not
        take (spaCy's "!TAG" negative label), or -1 for none.
    RETURNS (Tensor): (B, T, K) bool, True where the label is allowed.
    """
    labels = torch.arange(n_labels, device=tags.device)
    allowed = (tags.unsqueeze(-1) == labels) | (tags.unsqueeze(-1) < 0)
    if excluded is not None:
        allowed &= excluded.unsqueeze(-1) != labels
    return allowed  # shape: (B, T, K)


def path_score(scores: CRFScores, tags: torch.Tensor) -> torch.Tensor:
    """Score(x, y) of one given label path per sequence.

    tags (Tensor): (B, T) long label ids; values at padded steps are ignored.
    RETURNS (Tensor): (B,) start[y1] + sum emit + sum trans + end[yn].
    """
    emissions, mask, transitions, start, end = scores
    dtype = _compute_dtype(emissions)
    emissions = emissions.to(dtype)
    B, T, _ = emissions.shape
    tags = tags.masked_fill(~mask, 0)
    maskf = mask.to(dtype)
    emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)  # shape: (B, T)
    total = (emit * maskf).sum(1)
    if T > 1:
        trans = transitions.to(dtype)[tags[:, :-1], tags[:, 1:]]  # shape: (B, T-1)
        total = total + (trans * maskf[:, 1:]).sum(1)
    lengths = mask.sum(1)
    last = tags.gather(1, (lengths - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
    total = total + start.to(dtype)[tags[:, 0]] + end.to(dtype)[last]
    return torch.where(lengths > 0, total, torch.zeros_like(total))


def log_partition(scores: CRFScores) -> torch.Tensor:
    """log Z(x) by the forward algorithm in log space.

    RETURNS (Tensor): (B,) the log-sum-exp of Score(x, y) over all paths y.
    """
    emissions, mask, transitions, start, end = scores
    dtype = _compute_dtype(emissions)
    if emissions.shape[1] == 0:
        return emissions.new_zeros(emissions.shape[0], dtype=dtype)
    emissions = emissions.to(dtype)
    transitions = transitions.to(dtype)
    alpha = start.to(dtype) + emissions[:, 0]  # shape: (B, K)
    for t in range(1, emissions.shape[1]):
        # shape: (B, K, K) -> (B, K)
        step = torch.logsumexp(alpha.unsqueeze(2) + transitions, dim=1)
        alpha = torch.where(mask[:, t, None], step + emissions[:, t], alpha)
    log_z = torch.logsumexp(alpha + end.to(dtype), dim=1)
    return torch.where(mask[:, 0], log_z, torch.zeros_like(log_z))


def negative_log_likelihood(
    scores: CRFScores, allowed: torch.Tensor
) -> torch.Tensor:
    """The CRF loss per sequence, with partial labels.

    NLL = log Z(x) - log sum_{y agreeing with the gold} exp Score(x, y).
    With one allowed label per token this is log Z(x) - Score(x, y_gold); a
    token whose gold label is unknown allows every label, so the gold term sums
    over all paths that agree with the known labels. Both partition functions
    run in one batched forward pass.

    allowed (Tensor): (B, T, K) bool, the labels each token may take.
    RETURNS (Tensor): (B,) non-negative NLL; 0 for a sequence with no known label.
    """
    emissions, mask, transitions, start, end = scores
    if tuple(allowed.shape) != tuple(emissions.shape):
        raise ValueError(
            f"allowed must be {tuple(emissions.shape)}, got {tuple(allowed.shape)}"
        )
    dtype = _compute_dtype(emissions)
    emissions = emissions.to(dtype)
    clamped = emissions.masked_fill(~allowed, NEG_INF)
    both = CRFScores(
        torch.cat([emissions, clamped]),
        torch.cat([mask, mask]),
        transitions,
        start,
        end,
    )
    log_z, log_z_gold = log_partition(both).chunk(2)
    return log_z - log_z_gold


def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """The highest-scoring path of every sequence in the batch.

    The max-product recursion keeps backpointers; at padded steps the pointer
    is the identity, so backtracking for the whole batch at once with gather,
    from the last padded step, starts each sequence at its own last token.

    RETURNS (Tuple[Tensor, Tensor]): the paths, (B, T) long on the input's
        device (values at padded steps repeat the last real label), and their
        scores, (B,) (0 for an empty sequence).
    """
    emissions, mask, transitions, start, end = scores
    dtype = _compute_dtype(emissions)
    emissions = emissions.to(dtype)
    transitions = transitions.to(dtype)
    B, T, K = emissions.shape
    if T == 0:
        return mask.new_zeros((B, 0), dtype=torch.long), emissions.new_zeros(B)
    identity = torch.arange(K, device=emissions.device).expand(B, K)
    score = start.to(dtype) + emissions[:, 0]  # shape: (B, K)
    backpointers = []
    for t in range(1, T):
        # shape: (B, K, K) -> (B, K) best previous label for each next label
        best, pointer = (score.unsqueeze(2) + transitions).max(dim=1)
        step_mask = mask[:, t, None]
        score = torch.where(step_mask, best + emissions[:, t], score)
        backpointers.append(torch.where(step_mask, pointer, identity))
    best_score, last = (score + end.to(dtype)).max(dim=1)  # shape: (B,)
    path = [last]
    for pointer in reversed(backpointers):
        last = pointer.gather(1, last.unsqueeze(1)).squeeze(1)
        path.append(last)
    path.reverse()
    paths = torch.stack(path, dim=1)  # shape: (B, T)
    best_score = torch.where(mask[:, 0], best_score, torch.zeros_like(best_score))
    return paths, best_score
