"""CRF scores whose emissions stay packed: the tokens' rows, no padding.

Pure torch, no spaCy. The BiLSTM reads a batch as a PackedSequence (the rows
by decreasing length, time-major), and its emission layer scores the packed
tokens. Padding them into the (B, T, K) tensor that CRFScores holds costs a
fresh B * T * K block (for 110 Turkish docs of up to 346 tokens and 981
bundles, 149 MB, mostly padding) for every batch. Viterbi does not need it:
`PackedScores` keeps the packed emissions with where each row's tokens lie,
the Numba Viterbi (numba_viterbi.py) decodes them as they are, and
`padded()` builds the CRFScores for everything else (marginals, n-best, span
posteriors, the loss), equal to what the network would have returned, once.
"""

from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Tuple

import torch

from .crf import CRFScores


class PackingRows(NamedTuple):
    """Where the tokens of a padded (B, T) batch go in a PackedSequence.

    flat: (n_tokens,) index of each packed token in the flattened (B * T)
        batch, in packed order (time-major, longest row first).
    batch_sizes: (max_length,) rows still running at each step.
    sorted_indices: (B,) the rows ordered by decreasing length.
    """

    flat: torch.Tensor
    batch_sizes: torch.Tensor
    sorted_indices: torch.Tensor


def packing_rows(lengths: torch.Tensor, T: int) -> PackingRows:
    """Index a padded batch for packing, on the CPU.

    Gathering and scattering with these indices replaces torch's
    pack_padded_sequence and pad_packed_sequence (same layout), whose backward
    passes are slow on long batches.
    lengths (Tensor): (B,) long on the CPU, each between 1 and T.
    T (int): the padded length.
    """
    sorted_lengths, sorted_indices = torch.sort(lengths, descending=True, stable=True)
    steps = torch.arange(int(sorted_lengths[0]))
    batch_sizes = (sorted_lengths[None, :] > steps[:, None]).sum(dim=1)
    time = torch.repeat_interleave(steps, batch_sizes)
    step_start = torch.cumsum(batch_sizes, dim=0) - batch_sizes
    rank = torch.arange(len(time)) - step_start[time]
    return PackingRows(sorted_indices[rank] * T + time, batch_sizes, sorted_indices)


def token_starts(tokens: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Lay out a batch given as its rows' tokens one row after another.

    tokens (Tensor): (n_tokens, n) the tokens of row 0, then of row 1, ...
    lengths (Tensor): (B,) long on the CPU, summing to n_tokens.
    RETURNS (Tuple[Tensor, Tensor]): the tokens, with one zero token after
        them where a row is empty, and (B,) long on the CPU: where each row's
        first token is (the zero token for an empty row, whose one step
        reads it, as it would read padding).
    """
    starts = torch.cumsum(lengths, dim=0) - lengths
    empty = lengths == 0
    if bool(empty.any()):
        starts = torch.where(empty, tokens.shape[0], starts)
        tokens = torch.cat([tokens, tokens.new_zeros(1, tokens.shape[1])])
    return tokens, starts


def token_index(rows: PackingRows, starts: torch.Tensor, T: int) -> torch.Tensor:
    """(n_packed,) long, on `rows.flat`'s device: the token (`token_starts`)
    of each packed step of `rows`, which index a (B, T) batch."""
    flat = rows.flat
    return starts.to(flat.device)[flat // T] + flat % T


def pad_tokens(tokens: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T, n) the rows' tokens (`token_starts`), zero-padded."""
    valid = torch.arange(T)[None, :] < lengths[:, None]
    padded = tokens.new_zeros(len(lengths), T, tokens.shape[1])
    padded[valid.to(tokens.device)] = tokens[(starts[:, None] + torch.arange(T)[None, :])[valid].to(tokens.device)]
    return padded


@dataclass(eq=False)
class PackedScores:
    """The CRF scores of a batch with packed emissions.

    data (Tensor): (n_tokens, K) the emissions of the packed tokens, in the
        order of `rows` (every row has at least one: an empty row's one step
        is scored and masked out, as in the padded scores).
    rows (PackingRows): where they lie in the (B, T) batch (`flat` on the
        emissions' device, the rest on the CPU).
    mask, transitions, start, end, classes: as CRFScores's.
    """

    data: torch.Tensor
    rows: PackingRows
    mask: torch.Tensor
    transitions: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor
    classes: Optional[torch.Tensor] = None
    # the padded scores once built: every holder of these scores shares them
    _padded: Optional[CRFScores] = field(default=None, init=False, repr=False)

    @property
    def n_labels(self) -> int:
        return self.data.shape[1]

    def step_starts(self) -> torch.Tensor:
        """(T_packed,) long: where each step's tokens begin in `data`."""
        sizes = self.rows.batch_sizes
        return torch.cumsum(sizes, dim=0) - sizes

    def ranks(self) -> torch.Tensor:
        """(B,) long: each row's place within a step (its rank by length)."""
        order = self.rows.sorted_indices.cpu()
        rank = torch.empty_like(order)
        rank[order] = torch.arange(order.shape[0])
        return rank

    def padded(self) -> CRFScores:
        """The CRFScores: emissions (B, T, K), zero at padded steps (built at
        the first call, then kept)."""
        if self._padded is None:
            B, T = self.mask.shape
            emissions = self.data.new_zeros(B * T, self.n_labels)
            # in place: the out-of-place index_copy would copy all B * T rows once more
            emissions.index_copy_(0, self.rows.flat.to(self.data.device), self.data)  # no copy: flat is there
            self._padded = CRFScores(
                emissions.view(B, T, -1), self.mask, self.transitions, self.start, self.end, self.classes
            )
        return self._padded
