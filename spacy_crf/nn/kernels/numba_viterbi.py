"""The CPU Viterbi as fused loops compiled by Numba: full and factored transitions.

Pure torch and numpy, no spaCy. The torch code (crf.py, factored.py) runs a
step of the recursion as several whole-batch tensor operations, each a pass
over the (rows, K) scores plus a call's overhead; with ~1,000 labels
(morphological bundles) that is most of decoding. Here each row runs its own
loop, every step in one or two passes over K:

- full transitions: max_i (score[i] + transitions[i, j]) for every j, O(K * K)
  a token; each step's scores are kept and the best i is found again going
  back (no backpointers, so the pass is a branch-free max that vectorizes),
  eight predecessors i a pass over j;
- factored transitions (factored.py's form: a[i] + Q[class(i), class(j)] +
  offset[j]): the best score of each class's labels, the best move into each
  class, then each label's score, O(K + C * C) a token; going back, the
  predecessor factored.py chooses (the first of all K labels with the best
  kept score plus class move), searched only among the labels of the classes
  that reach that best.

Both compute the torch code's sums in its order and choose as its argmax does
(the first maximal label), so paths and scores are the same bit for bit, ties
included, in float32 or float64 (tests/nn/test_numba_viterbi.py against crf.py,
factored.py and brute force). Non-finite scores give labels in range (NaN is
never chosen; torch's code may choose it). The kernels themselves are
spacy_crf/engine/viterbi_kernels.py's (torch-free; the torch-free engine runs them
too): importing this module imports Numba, so dispatch.py imports it only
where Numba is installed and can cache.
"""

from typing import Tuple, Union

import numpy
import torch

from ...engine.viterbi_kernels import factored_kernel as _factored
from ...engine.viterbi_kernels import full_kernel as _full
from ..crf import CRFScores, _compute_dtype, check_scores
from ..factored import check_classes, split
from ..packed import PackedScores


@torch.no_grad()
def viterbi_decode(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode (factored.viterbi_decode where `scores.classes` is
    set) for CPU tensors.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label) and scores (B,) in the compute dtype (0 for an
        empty row).
    """
    check_scores(scores)
    emissions = scores.emissions
    B, T, K = emissions.shape
    # row b's step t is row b * T + t of the (B * T, K) emissions
    rows = emissions.detach().to(_compute_dtype(emissions)).contiguous().view(B * T, K)
    return _decode(rows, torch.arange(T), torch.arange(B) * T, scores)


@torch.no_grad()
def viterbi_decode_packed(scores: PackedScores) -> Tuple[torch.Tensor, torch.Tensor]:
    """`viterbi_decode` of `scores.padded()`, straight from the packed
    emissions (CPU tensors): the same paths and scores, without the padded
    (B, T, K) tensor."""
    data = scores.data.detach()
    rows = data.to(_compute_dtype(data)).contiguous()
    return _decode(rows, scores.step_starts(), scores.ranks(), scores)


def _decode(
    rows: torch.Tensor, step_starts: torch.Tensor, ranks: torch.Tensor, scores: Union[CRFScores, PackedScores]
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decode emissions held as rows: row b's step t is rows[step_starts[t] + ranks[b]]."""
    mask = scores.mask
    B, T = mask.shape
    dtype = rows.dtype
    if T == 0 or B == 0:
        return mask.new_zeros((B, T), dtype=torch.long), rows.new_zeros(B)
    em = rows.numpy()
    where = (step_starts.to(torch.int64).numpy(), ranks.to(torch.int64).numpy())
    lengths = mask.sum(1).numpy()
    start = _host(scores.start, dtype)
    end = _host(scores.end, dtype)
    paths = numpy.empty((B, T), dtype=numpy.int64)
    best = numpy.empty((B,), dtype=em.dtype)
    if scores.classes is None:
        _full(em, *where, lengths, _host(scores.transitions, dtype), start, end, paths, best)
    else:
        classes = check_classes(scores.classes, em.shape[1])
        leave, pair, enter, _, _ = split(scores.transitions.detach().to(dtype), classes)
        # the labels of each class, in label order: members[offsets[c]:offsets[c + 1]]
        members = torch.argsort(classes, stable=True)
        offsets = torch.cat([classes.new_zeros(1), torch.bincount(classes, minlength=pair.shape[0]).cumsum(0)])
        _factored(
            em,
            *where,
            lengths,
            _host(leave, dtype),
            _host(pair, dtype),
            _host(enter, dtype),
            classes.contiguous().numpy(),
            members.numpy(),
            offsets.numpy(),
            start,
            end,
            paths,
            best,
        )
    return torch.from_numpy(paths), torch.from_numpy(best)


def _host(x: torch.Tensor, dtype: torch.dtype) -> numpy.ndarray:
    return x.detach().to(dtype).contiguous().numpy()
