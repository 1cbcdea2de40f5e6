"""The loss the component calls: CRF negative log-likelihood of a CRFBatch."""
from typing import Sequence, Tuple

import numpy
import torch

from ..nn import CRFScores, crf_loss
from .crf_batch import CRFBatch


def crf_batch_loss(
    batch: CRFBatch, gold: Sequence[numpy.ndarray], excluded: Sequence[numpy.ndarray]
) -> Tuple[float, CRFBatch]:
    """The summed partial-label NLL of a batch and its gradient.

    batch (CRFBatch): the model's output, from `begin_update`.
    gold (Sequence[ndarray]): per doc, an int64 label id per token; -1 where
        the gold label is unknown (every label allowed).
    excluded (Sequence[ndarray]): per doc, an int64 label id per token that the
        token must not take, or -1.
    RETURNS (Tuple[float, CRFBatch]): the loss (NaN or inf if the scores are),
        and the gradient with respect to the emissions, transitions, start and
        end (None where fixed), to hand to the model's backprop.
    """
    emissions, mask, transitions, start, end, classes = batch.scores
    gold_grid = batch.to_grid(gold)
    excluded_grid = batch.to_grid(excluded)
    leaves = [
        t.detach().requires_grad_(grad)
        for t, grad in [
            (emissions, True),
            (transitions, transitions.requires_grad),
            (start, start.requires_grad),
            (end, end.requires_grad),
        ]
    ]
    with torch.enable_grad():
        loss = crf_loss(CRFScores(leaves[0], mask, *leaves[1:], classes), gold_grid, excluded_grid)
        trainable = [leaf for leaf in leaves if leaf.requires_grad]
        grads = iter(torch.autograd.grad(loss, trainable))
    d_scores = [next(grads) if leaf.requires_grad else None for leaf in leaves]
    return float(loss.detach()), batch.like(CRFScores(d_scores[0], None, *d_scores[1:]))
