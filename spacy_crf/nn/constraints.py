"""Hard transition constraints on CRF scores: forbidden entries become log(0).

Pure torch, no spaCy. The boolean masks come from `spacy_crf.constraints`.
"""
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

    def forbid(x: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        return torch.where(ok, x, torch.full_like(x, NEG_INF))

    return CRFScores(
        emissions,
        mask,
        forbid(transitions, allowed_transitions),
        forbid(start, allowed_start),
        forbid(end, allowed_end),
    )
