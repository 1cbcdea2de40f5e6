"""The exact sequence-level KL divergence between two linear-chain CRFs on
the same rows: the distillation loss.

Pure torch, no spaCy. For a teacher distribution P_t(y | x) and a student
P_s(y | x), both CRFs over the same K labels and the same padded rows,

    KL(P_t || P_s) = E_t[log P_t(y) - log P_s(y)]
                   = log Z_s - log Z_t - E_t[Score_s(y) - Score_t(y)]

(= E_t[-log P_s(y)] - H(P_t), the cross-entropy less the teacher's entropy).
Score is linear in the scores, so its expectation under the teacher needs
only the teacher's token marginals mu_t(k) and its pairwise marginals
P_t(y_(t-1) = i, y_t = j), both exact from one forward-backward pass:

    E_t[Score_s - Score_t] = sum_t sum_k mu_t(k) (emit_s - emit_t)[t, k]
                           + sum_(t>1) sum_(i,j) P_t(i, j) (trans_s - trans_t)[i, j]
                           + sum_k mu_1(k) (start_s - start_t)[k]
                           + sum_k mu_n(k) (end_s - end_t)[k]

No sampling, no top-k: the value and its gradient are exact. The gradient to
the student's emissions is mu_s - mu_t, to its transitions the student's
expected transition counts less the teacher's (log Z_s's backward pass gives
the student's side). Both are 0 where the student equals the teacher.

Constraints: a forbidden entry of either side is NEG_INF in its scores
(`constraints.constrain`). The teacher's distribution is then its
constrained one (a path it forbids has probability exactly 0, so the
student's score there is never read), and the student's log Z sums over the
paths its own constraints allow. A path the teacher allows and the student
forbids makes the divergence infinite in exact arithmetic: here it is about
1e9 times that path's probability, so the callers check that the student
forbids nothing the teacher allows. Class-factored scores (`classes` set)
are read through their dense matrix; log Z_s takes the factored algorithms.

A temperature is the caller's: pass the teacher's scores already tempered
(`spacy_crf.ml.crf_batch.temper`) for a tempered teacher distribution.
"""

from typing import Callable, Optional

import torch

from .crf import CRFScores, _compute_dtype, check_scores
from .kernels.dispatch import log_partition
from .spans import forward_backward


def check_same_rows(student: CRFScores, teacher: CRFScores) -> None:
    """Raise ValueError naming the shapes if the two do not score the same
    labels on the same rows (emissions of one shape, equal masks)."""
    check_scores(student)
    check_scores(teacher)
    if tuple(student.emissions.shape) != tuple(teacher.emissions.shape):
        raise ValueError(
            f"student and teacher emissions must have one shape, got {tuple(student.emissions.shape)} "
            f"and {tuple(teacher.emissions.shape)}"
        )
    if not torch.equal(student.mask, teacher.mask):
        raise ValueError("student and teacher must score the same rows (their masks differ)")


def kl_divergence(
    student: CRFScores,
    teacher: CRFScores,
    *,
    partition: Optional[Callable[[CRFScores], torch.Tensor]] = None,
) -> torch.Tensor:
    """KL(teacher || student) of each row, differentiable in the student's scores.

    student (CRFScores): the student's scores; gradients flow to whichever
        of its tensors need them.
    teacher (CRFScores): the teacher's scores on the same rows (same mask,
        same label order), constant (no gradient is taken through them).
    partition (Optional[Callable]): the log Z function for the student; None
        for `spacy_crf.nn.log_partition` (the kernels' dispatch).
    RETURNS (Tensor): (B,) KL in nats, >= 0 (float rounding clamped away),
        0 for a row of length 0; float64 if the student's emissions are.
    """
    check_same_rows(student, teacher)
    partition = partition or log_partition
    dtype = _compute_dtype(student.emissions)
    mask = student.mask
    B, T, K = student.emissions.shape
    if T == 0:
        return student.emissions.new_zeros(B, dtype=dtype)
    teacher = CRFScores(
        teacher.emissions.detach().to(dtype),
        teacher.mask,
        teacher.transitions.detach().to(dtype),
        teacher.start.detach().to(dtype),
        teacher.end.detach().to(dtype),
        teacher.classes,
    )
    with torch.no_grad():
        alphas, betas, log_z_t = forward_backward(teacher)  # shape: (B, T, K) twice, (B,)
        mu = torch.exp(alphas + betas - log_z_t[:, None, None]) * mask[..., None]  # shape: (B, T, K)
        lengths = mask.sum(1)
        last = mu.gather(1, (lengths - 1).clamp(min=0)[:, None, None].expand(B, 1, K)).squeeze(1)  # shape: (B, K)
    emissions_s = student.emissions.to(dtype)
    emit = ((emissions_s - teacher.emissions).masked_fill(~mask[..., None], 0.0) * mu).sum((1, 2))
    start = (mu[:, 0] * (student.start.to(dtype) - teacher.start)).sum(1)
    end = (last * (student.end.to(dtype) - teacher.end)).sum(1)
    expected = emit + start + end
    if T > 1:
        expected = expected + _expected_transitions(
            student.transitions.to(dtype) - teacher.transitions, teacher, alphas, betas, log_z_t
        )
    log_z_s = partition(CRFScores(emissions_s, mask, student.transitions, student.start, student.end, student.classes))
    kl = (log_z_s.to(dtype) - log_z_t) - expected
    return torch.where(lengths > 0, kl.clamp_min(0.0), torch.zeros_like(kl))


def _expected_transitions(
    difference: torch.Tensor,
    teacher: CRFScores,
    alphas: torch.Tensor,
    betas: torch.Tensor,
    log_z: torch.Tensor,
) -> torch.Tensor:
    """sum_(t>1) sum_(i,j) P_t(y_(t-1) = i, y_t = j) difference[i, j] per row,
    with the pairwise marginals
    exp(alpha_(t-1)(i) + trans_t[i, j] + emit_t[t, j] + beta_t(j) - log Z)
    taken row-maximum-rescaled, as in log Z's backward pass (crf.py), and
    never materialised: one (B * (T-1), K) @ (K, K) product.

    difference (Tensor): (K, K), differentiable (the student's side).
    RETURNS (Tensor): (B,).
    """
    B, T, K = alphas.shape
    with torch.no_grad():
        transitions = teacher.transitions
        shift = transitions.max()
        before = alphas[:, :-1]  # shape: (B, T-1, K)
        after = teacher.emissions[:, 1:] + betas[:, 1:]
        top_before = before.max(-1, keepdim=True).values
        top_after = after.max(-1, keepdim=True).values
        weight = torch.exp(top_before + top_after + shift - log_z[:, None, None]) * teacher.mask[:, 1:, None]
        left = (torch.exp(before - top_before) * weight).reshape(-1, K)  # shape: (B * (T-1), K)
        right = torch.exp(after - top_after).reshape(-1, K)
        exp_transitions = torch.exp(transitions - shift)  # shape: (K, K); 0 where the teacher forbids
    # 0 * (a forbidden entry's difference) is 0: the teacher's pairwise marginal there is exactly 0
    weighted = exp_transitions * difference.masked_fill(exp_transitions == 0, 0.0)
    per_step = ((left @ weighted) * right).sum(1)  # shape: (B * (T-1),)
    return per_step.view(B, T - 1).sum(1)
