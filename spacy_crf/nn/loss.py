"""The CRF training loss on a padded batch: partial-label negative log-likelihood.

Pure torch, no spaCy. The NLL is dispatch.py's: the fused kernels on CUDA.
"""
from typing import Optional, Tuple

import torch

from .crf import CRFScores, allowed_from_tags
from .dispatch import log_partition, negative_log_likelihood
from .rejected import log_partition_without


def crf_loss(
    scores: CRFScores,
    gold: torch.Tensor,
    excluded: Optional[torch.Tensor] = None,
    rejected: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """The summed negative log-likelihood of the gold labels of a batch.

    A token whose gold label is unknown allows every label (a partial-label
    CRF: the loss sums over those paths), an excluded label is ruled out, and
    a sequence with no known or excluded label adds exactly 0.

    scores (CRFScores): the batch; gradients flow to whichever tensors need them.
    gold (Tensor): (B, T) long, a label id per token or -1 where unknown.
    excluded (Optional[Tensor]): (B, T) long, a label id the token must not
        take (spaCy's "!TAG"), or -1 for none.
    rejected (Optional[Tuple[Tensor, Tensor]]): spans that are not entities
        (an annotator's rejections) and the entity patterns: (N, 4) long rows
        (row, first, last, type) and (n_types, 5) long, as in rejected.py. The
        paths that contain one are left out of the gold sum (exactly).
    RETURNS (Tensor): the scalar loss.
    """
    allowed = allowed_from_tags(gold, scores.emissions.shape[2], excluded=excluded)
    has_gold = gold >= 0
    if excluded is not None:
        has_gold |= excluded >= 0
    nll = negative_log_likelihood(scores, allowed)  # shape: (B,)
    if rejected is not None and rejected[0].numel():
        spans, patterns = rejected
        rows = torch.unique(spans[:, 0])
        has_gold = has_gold.index_fill(0, rows.to(has_gold.device), True)
        local = spans.clone()
        local[:, 0] = torch.searchsorted(rows, spans[:, 0].contiguous())
        sub = CRFScores(scores.emissions[rows], scores.mask[rows], *scores[2:])
        without = log_partition_without(sub, allowed[rows], local, patterns)
        log_z = log_partition(sub).to(without.dtype)
        nll = nll.index_put((rows.to(nll.device),), (log_z - without).clamp_min(0.0).to(nll.dtype))
    return torch.where(has_gold.any(dim=1), nll, torch.zeros_like(nll)).sum()
