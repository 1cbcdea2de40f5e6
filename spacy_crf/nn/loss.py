"""The CRF training loss on a padded batch: partial-label negative log-likelihood.

Pure torch, no spaCy. The NLL is dispatch.py's: the fused kernels on CUDA.
"""
from typing import Optional

import torch

from .crf import CRFScores, allowed_from_tags
from .dispatch import negative_log_likelihood


def crf_loss(
    scores: CRFScores, gold: torch.Tensor, excluded: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """The summed negative log-likelihood of the gold labels of a batch.

    A token whose gold label is unknown allows every label (a partial-label
    CRF: the loss sums over those paths), an excluded label is ruled out, and
    a sequence with no known or excluded label adds exactly 0.

    scores (CRFScores): the batch; gradients flow to whichever tensors need them.
    gold (Tensor): (B, T) long, a label id per token or -1 where unknown.
    excluded (Optional[Tensor]): (B, T) long, a label id the token must not
        take (spaCy's "!TAG"), or -1 for none.
    RETURNS (Tensor): the scalar loss.
    """
    allowed = allowed_from_tags(gold, scores.emissions.shape[2], excluded=excluded)
    has_gold = gold >= 0
    if excluded is not None:
        has_gold |= excluded >= 0
    nll = negative_log_likelihood(scores, allowed)  # shape: (B,)
    return torch.where(has_gold.any(dim=1), nll, torch.zeros_like(nll)).sum()
