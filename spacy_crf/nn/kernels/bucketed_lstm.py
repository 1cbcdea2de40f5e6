"""A bidirectional LSTM on the CPU, run one direction at a time over buckets of rows.

Pure torch, no spaCy. Over a PackedSequence torch runs an LSTM with its own
per-step code; over a padded (rows, T, n) float32 or bfloat16 tensor on the
CPU it calls oneDNN's fused LSTM, which costs less per token, forward and
backward (benchmarks/lstm_cpu.py measures both). Padding costs steps, and a
padded bidirectional LSTM would read each row's padding first in its backward
direction, so here:

- the rows, sorted by decreasing length, are cut into buckets of similar
  lengths (`buckets`), each padded only to its own longest row;
- each direction runs as a one-direction LSTM over each bucket, the backward
  one over every row reversed within its length (the padding stays after the
  row's tokens, where it cannot reach them);
- the outputs of the row's tokens come back in packed order (time-major,
  longest row first), as `nn.LSTM` returns them for a PackedSequence;
- or, given a linear `head` (prediction), head(outputs) comes back instead,
  computed bucket by bucket: each direction's outputs times its half of the
  weights, added in place, without the (n_tokens, 2 * hidden) outputs (a
  fresh block of 38 MB for a batch of 25,000 tokens, whose page faults cost
  more than the products).

The outputs equal `nn.LSTM`'s over the packed rows up to float rounding,
gradients included (tests/nn/test_bucketed_lstm.py).
"""

from typing import List, Optional, Tuple

import numpy
import torch
from torch import nn

from ..packed import PackingRows

# The cost model that cuts the buckets, in units of one row's LSTM step: a
# step of a bucket costs STEP_COST + its rows, a bucket BUCKET_COST more (its
# calls, gathers and copies). Measured with oneDNN's LSTM on one thread (a
# step of 1 to 256 rows: about 8 us + 3.6 us a row forward, 20 us + 13 us a
# row forward and backward); benchmarks/lstm_cpu.py times the result.
STEP_COST = 2.0
BUCKET_COST = 80.0


def buckets(
    sorted_lengths: List[int], step_cost: Optional[float] = None, bucket_cost: Optional[float] = None
) -> List[Tuple[int, int]]:
    """Cut rows sorted by decreasing length into runs [start, end) padded to
    their first (longest) row, at the least cost: sum over runs of
    length * (step_cost + rows) + bucket_cost (dynamic programming over the
    cut points; defaults STEP_COST and BUCKET_COST).

    A cut between two rows of the same length is never cheaper than the cut
    before the first of them (it pads no less, and costs a bucket more or a
    longer first row), so only the starts of the groups of equal lengths are
    tried (for costs >= 0): a batch of sentences has thousands of rows but
    few lengths."""
    step_cost = STEP_COST if step_cost is None else step_cost
    bucket_cost = BUCKET_COST if bucket_cost is None else bucket_cost
    if step_cost < 0 or bucket_cost < 0:
        raise ValueError(f"the bucket costs must not be negative, not {step_cost} and {bucket_cost}")
    n = len(sorted_lengths)
    if n == 0:
        return []
    lengths = numpy.asarray(sorted_lengths, dtype=numpy.float64)
    points = numpy.append(numpy.flatnonzero(numpy.r_[True, lengths[1:] != lengths[:-1]]), n)
    best = numpy.zeros(len(points))  # best[j]: the least cost of rows [0, points[j])
    cut = numpy.zeros(len(points), dtype=numpy.int64)
    for j in range(1, len(points)):
        starts = points[:j]
        costs = best[:j] + lengths[starts] * (step_cost + (points[j] - starts)) + bucket_cost
        cut[j] = int(numpy.argmin(costs))
        best[j] = costs[cut[j]]
    runs: List[Tuple[int, int]] = []
    end = len(points) - 1
    while end > 0:
        runs.append((int(points[cut[end]]), int(points[end])))
        end = int(cut[end])
    return runs[::-1]


def runs_on(lstm: nn.Module, inputs: torch.Tensor) -> bool:
    """Whether bucketed_bilstm can run this LSTM on these inputs: a
    bidirectional nn.LSTM on the CPU. (oneDNN takes float32 and bfloat16;
    other float types run torch's own padded LSTM, as exact, for the tests in
    float64. The int8 copy's quantized LSTM stays packed: over the buckets it
    ran 0.95x as fast, benchmarks/lstm_cpu.py, and its activations' scales
    would change with the buckets.)"""
    return (
        type(lstm) is nn.LSTM
        and lstm.bidirectional
        and lstm.batch_first
        and lstm.proj_size == 0
        and inputs.device.type == "cpu"
        and inputs.is_floating_point()
    )


def _direction(lstm: nn.LSTM, layer: int, reverse: bool) -> List[torch.Tensor]:
    suffix = f"_l{layer}" + ("_reverse" if reverse else "")
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if lstm.bias else [])
    return [getattr(lstm, name + suffix) for name in names]


def _run(lstm: nn.LSTM, x: torch.Tensor, layer: int, reverse: bool) -> torch.Tensor:
    """One direction of one layer over a padded bucket (rows, T, n)."""
    state = x.new_zeros(1, x.shape[0], lstm.hidden_size)
    weights = _direction(lstm, layer, reverse)
    return torch.lstm(x, (state, state), weights, lstm.bias, 1, 0.0, lstm.training, False, True)[0]


def bucketed_bilstm(
    lstm: nn.LSTM,
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    rows: PackingRows,
    starts: Optional[torch.Tensor] = None,
    T: Optional[int] = None,
    head: Optional[nn.Linear] = None,
) -> torch.Tensor:
    """Run a bidirectional LSTM over the rows of a batch.

    lstm (nn.LSTM): bidirectional, batch_first (see `runs_on`).
    inputs (Tensor): (B, T, n) padded token vectors, on the CPU; or, with
        `starts`, (n_tokens, n) the rows' tokens without padding.
    lengths (Tensor): (B,) long on the CPU, each between 1 and T.
    rows (PackingRows): `packing_rows(lengths, T)`.
    starts (Optional[Tensor]): (B,) long on the CPU, where each row's first
        token is in `inputs` (`packed.token_starts`); None for padded inputs.
    T (Optional[int]): with `starts`, the T that `rows` was built with (for
        padded inputs, their second dimension).
    head (Optional[nn.Linear]): a linear layer over the 2 * hidden outputs.
    RETURNS (Tensor): (n_tokens, 2 * hidden) the outputs of the rows' tokens
        in packed order, as `lstm(PackedSequence).data`; with `head`,
        (n_tokens, head.out_features): head(those outputs), up to float
        rounding.
    """
    B = lengths.shape[0]
    if starts is None:
        B, T, _ = inputs.shape
        tokens, starts = inputs.reshape(B * T, -1), torch.arange(B) * T
    elif T is None:
        raise ValueError("bucketed_bilstm over tokens needs the T that its rows were built with")
    else:
        tokens = inputs
    hidden = lstm.hidden_size
    order = rows.sorted_indices
    sorted_lengths = lengths[order]
    # where each (row, t) of the (B, T) batch lands in packed order
    position = torch.empty(B * T, dtype=torch.long)
    position[rows.flat.cpu()] = torch.arange(rows.flat.shape[0])
    n_tokens = rows.flat.shape[0]
    if head is None:
        output = tokens.new_empty(n_tokens, 2 * hidden)
    else:
        output = tokens.new_zeros(n_tokens, head.out_features) if head.bias is None else head.bias.repeat(n_tokens, 1)
        forward_weight, backward_weight = head.weight[:, :hidden].t(), head.weight[:, hidden:].t()
    last = lstm.num_layers - 1
    for start, end in buckets(sorted_lengths.tolist()):
        members, member_lengths = order[start:end], sorted_lengths[start:end]
        width = int(member_lengths[0])
        steps = torch.arange(width)
        valid = steps[None, :] < member_lengths[:, None]
        reversal = torch.where(valid, member_lengths[:, None] - 1 - steps[None, :], steps[None, :])
        # each direction's padded bucket straight from the tokens: padding
        # cells read the row's first token, after the row's own tokens in
        # either direction, where they cannot reach them
        first = starts[members][:, None]
        x = _bucket(tokens, first + torch.where(valid, steps[None, :], 0))
        x_reversed = _bucket(tokens, first + torch.where(valid, reversal, 0))
        for layer in range(lstm.num_layers):
            if layer > 0:
                if lstm.dropout > 0:
                    x = nn.functional.dropout(x, lstm.dropout, lstm.training)
                x_reversed = x.gather(1, reversal[:, :, None].expand(-1, -1, x.shape[2]))
            forward = _run(lstm, x, layer, reverse=False)
            # the backward direction reads each row reversed within its length
            backward = _run(lstm, x_reversed, layer, reverse=True)
            if layer < last:
                backward = backward.gather(1, reversal[:, :, None].expand(-1, -1, hidden))
                x = torch.cat([forward, backward], dim=2)
        # the rows' tokens straight to their packed places: forward outputs by
        # (row, t), backward outputs by (row, length - 1 - t)
        cells = (members[:, None] * T + steps[None, :])[valid]
        flipped = (members[:, None] * T + reversal)[valid]
        index = valid.reshape(-1).nonzero().squeeze(1)
        forward = forward.reshape(-1, hidden).index_select(0, index)
        backward = backward.reshape(-1, hidden).index_select(0, index)
        if head is None:
            output[:, :hidden].index_copy_(0, position[cells], forward)
            output[:, hidden:].index_copy_(0, position[flipped], backward)
        else:  # each token's place is written once: index_add_ is exact and deterministic here
            output.index_add_(0, position[cells], forward @ forward_weight)
            output.index_add_(0, position[flipped], backward @ backward_weight)
    return output


def _bucket(tokens: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(rows, width, n) the tokens at a (rows, width) index."""
    return tokens.index_select(0, index.reshape(-1)).reshape(*index.shape, tokens.shape[1])
