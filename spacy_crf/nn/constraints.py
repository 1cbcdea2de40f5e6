"""Hard transition constraints on CRF scores: forbidden entries become log(0).

Pure torch, no spaCy. The boolean masks come from `spacy_crf.constraints`.
"""

from typing import Tuple

import torch

from .crf import NEG_INF, CRFScores


def constrain(
    scores: CRFScores,
    allowed_transitions: torch.Tensor,
    allowed_start: torch.Tensor,
    allowed_end: torch.Tensor,
) -> CRFScores:
    """Set every forbidden transition, first and last label to NEG_INF.

    Differentiable: the forbidden entries get no gradient, the others their own.
    A path through a forbidden entry then has probability exactly 0 in the
    loss, the marginals and n-best, and Viterbi never returns one.

    allowed_transitions (Tensor): (K, K) bool, [i, j] if label j may follow i.
    allowed_start (Tensor): (K,) bool. allowed_end (Tensor): (K,) bool.
    RETURNS (CRFScores): the same emissions and mask, constrained parameters.
    """
    emissions, mask, transitions, start, end, _ = scores
    return CRFScores(emissions, mask, *forbid(transitions, start, end, allowed_transitions, allowed_start, allowed_end))


def forbid(
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
    allowed_transitions: torch.Tensor,
    allowed_start: torch.Tensor,
    allowed_end: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`constrain` on the CRF parameters alone: (transitions, start, end)
    with every forbidden entry NEG_INF."""

    def keep(x: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        return torch.where(ok, x, torch.full_like(x, NEG_INF))

    return keep(transitions, allowed_transitions), keep(start, allowed_start), keep(end, allowed_end)
