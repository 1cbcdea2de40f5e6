"""The losses the component calls on a CRFBatch: the CRF negative
log-likelihood of gold labels (training), the KL divergence from a
teacher's distribution (distillation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence, Tuple

import numpy

from ..optional import has_torch
from .crf_batch import CRFBatch
from .teacher_scores import TeacherScores

if TYPE_CHECKING or has_torch():
    import torch

    from ..nn import CRFScores, crf_loss
    from ..nn.divergence import kl_divergence


def crf_batch_loss(
    batch: CRFBatch,
    gold: Sequence[numpy.ndarray],
    excluded: Sequence[numpy.ndarray],
    rejected: Optional[Sequence[Sequence[Tuple[int, int, int]]]] = None,
    patterns: Optional[Sequence[Sequence[int]]] = None,
    *,
    groups: Optional[numpy.ndarray] = None,
) -> Tuple[float, CRFBatch]:
    """The summed partial-label NLL of a batch and its gradient.

    batch (CRFBatch): the model's output, from `begin_update`.
    gold (Sequence[ndarray]): per doc, an int64 label id per token; -1 where
        the gold label is unknown (every label allowed); K + g where the
        token may take the labels of row g of `groups`.
    excluded (Sequence[ndarray]): per doc, an int64 label id per token that the
        token must not take, or -1.
    rejected (Optional[Sequence[Sequence[Tuple[int, int, int]]]]): per doc,
        spans (start, end exclusive, type) that are not entities of that type:
        the paths containing one leave the gold sum (a span across a chunk's
        edge is on no path: ignored). patterns: the types' label patterns
        (`spacy_crf.targets.span_patterns`), needed with `rejected`.
    groups (Optional[ndarray]): (G, K) bool, the label sets of tokens whose
        label is known in part (`spacy_crf.targets.partial_gold`).
    RETURNS (Tuple[float, CRFBatch]): the loss (NaN or inf if the scores are),
        and the gradient with respect to the emissions, transitions, start and
        end (None where fixed), to hand to the model's backprop.
    """
    gold_grid = batch.to_grid(gold)
    excluded_grid = batch.to_grid(excluded)
    device = batch.scores.emissions.device
    rejected_rows = None
    if rejected is not None and any(rejected):
        inside, _, _ = batch.spans_in_rows(rejected)
        rejected_rows = (
            torch.tensor(inside, dtype=torch.long, device=device).view(-1, 4),
            torch.tensor(patterns, dtype=torch.long, device=device).view(-1, 5),
        )
    group_table = None if groups is None else torch.as_tensor(groups, dtype=torch.bool, device=device)
    return loss_and_gradient(
        batch, lambda scores: crf_loss(scores, gold_grid, excluded_grid, rejected_rows, groups=group_table)
    )


def distillation_batch_loss(batch: CRFBatch, teacher: TeacherScores) -> Tuple[float, CRFBatch]:
    """The summed KL(teacher || student) of a batch's rows and its gradient.

    batch (CRFBatch): the student's output, from `begin_update`.
    teacher (TeacherScores): the teacher's scores for the same docs, in the
        student's label order (`TeacherScores.aligned`).
    RETURNS (Tuple[float, CRFBatch]): the loss in nats (NaN or inf if the
        scores are), and its gradient with respect to the student's
        emissions, transitions, start and end (None where fixed).
    """
    return loss_and_gradient(batch, lambda scores: kl_divergence(scores, teacher.on_rows(batch)).sum())


def loss_and_gradient(batch: CRFBatch, loss_of: Callable[[CRFScores], torch.Tensor]) -> Tuple[float, CRFBatch]:
    """A scalar loss of the batch's scores and its gradient with respect to
    the emissions, transitions, start and end (None where fixed).

    loss_of (Callable[[CRFScores], Tensor]): the loss of the scores.
    RETURNS (Tuple[float, CRFBatch]): the loss and the gradient, to hand to the model's backprop.
    """
    emissions, mask, transitions, start, end, classes = batch.scores
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
        loss = loss_of(CRFScores(leaves[0], mask, leaves[1], leaves[2], leaves[3], classes))
        trainable = [leaf for leaf in leaves if leaf.requires_grad]
        grads = iter(torch.autograd.grad(loss, trainable))
    d_scores = [next(grads) if leaf.requires_grad else None for leaf in leaves]
    # the gradient, in a CRFScores: None for the mask and where the scores are fixed
    d_batch = CRFScores(d_scores[0], None, *d_scores[1:])  # type: ignore[arg-type]  # a gradient: Nones allowed
    return float(loss.detach()), batch.like(d_batch)
