"""The CRF training loss on a padded batch: partial-label negative log-likelihood.

Pure torch, no spaCy. The NLL is dispatch.py's: the fused kernels on CUDA.
"""

from typing import Optional, Tuple

import torch

from .crf import CRFScores, allowed_from_tags
from .kernels.dispatch import log_partition, negative_log_likelihood
from .rejected import log_partition_without


def crf_loss(
    scores: CRFScores,
    gold: torch.Tensor,
    excluded: Optional[torch.Tensor] = None,
    rejected: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    groups: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """The summed negative log-likelihood of the gold labels of a batch.

    A token whose gold label is unknown allows every label (a partial-label
    CRF: the loss sums over those paths), a token whose label is known in
    part allows the labels that agree with that part, an excluded label is
    ruled out, and a sequence with no known or excluded label adds exactly 0.

    scores (CRFScores): the batch; gradients flow to whichever tensors need them.
    gold (Tensor): (B, T) long, a label id per token, -1 where unknown, or
        K + g where the token may take the labels of row g of `groups`.
    excluded (Optional[Tensor]): (B, T) long, a label id the token must not
        take (spaCy's "!TAG"), or -1 for none.
    rejected (Optional[Tuple[Tensor, Tensor]]): spans that are not entities
        (an annotator's rejections) and the entity patterns: (N, 4) long rows
        (row, first, last, type) and (n_types, 5) long, as in rejected.py. The
        paths that contain one are left out of the gold sum (exactly).
    groups (Optional[Tensor]): (G, K) bool, the label sets of partly known
        tokens (`allowed_from_tags`).
    RETURNS (Tensor): the scalar loss.
    """
    allowed = allowed_from_tags(gold, scores.emissions.shape[2], excluded=excluded, groups=groups)
    has_gold = gold >= 0
    if excluded is not None:
        has_gold |= excluded >= 0
    if rejected is None or not rejected[0].numel():
        nll = negative_log_likelihood(scores, allowed)  # shape: (B,)
    else:
        # rows with rejected spans: log Z less the sum without them; the
        # others: the NLL as usual (each row's log Z computed once)
        spans, patterns = rejected
        rows = torch.unique(spans[:, 0]).to(gold.device)
        has_gold = has_gold.index_fill(0, rows, True)
        local = spans.clone()
        local[:, 0] = torch.searchsorted(rows, spans[:, 0].contiguous())
        sub = CRFScores(scores.emissions[rows], scores.mask[rows], *scores[2:])
        without = log_partition_without(sub, allowed[rows], local, patterns)
        nll_rejected = (log_partition(sub).to(without.dtype) - without).clamp_min(0.0)
        others = torch.ones(gold.shape[0], dtype=torch.bool, device=gold.device).index_fill(0, rows, False)
        others = others.nonzero().squeeze(1)
        nll = nll_rejected.new_zeros(gold.shape[0]).index_put((rows,), nll_rejected)
        if others.numel():
            rest = CRFScores(scores.emissions[others], scores.mask[others], *scores[2:])
            nll = nll.index_put((others,), negative_log_likelihood(rest, allowed[others]).to(nll.dtype))
    return torch.where(has_gold.any(dim=1), nll, torch.zeros_like(nll)).sum()
