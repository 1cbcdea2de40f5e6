"""A bidirectional LSTM over a batch of rows, for prediction (numpy and Numba, no torch).

It computes what torch's `nn.LSTM` computes over the packed rows (gates in
torch's order: input, forget, cell, output; both biases): the rows, sorted by
decreasing length, run one step at a time, each step over the rows still
running (a prefix of them), as a PackedSequence runs; the backward direction
reads each row reversed within its length. Each step is one matrix product
(numpy's BLAS) and one fused pass over the gates (`_cell`, Numba); the input
products of every step are one matrix product ahead of the loop.
"""

from typing import List, Tuple

import numba
import numpy

# one direction's weights: weight_ih (4H, n), weight_hh (4H, H), bias (4H,) (bias_ih + bias_hh)
Direction = Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]


def bilstm(tokens: numpy.ndarray, lengths: numpy.ndarray, layers: List[Tuple[Direction, Direction]]) -> numpy.ndarray:
    """Run a bidirectional LSTM over rows.

    tokens (numpy.ndarray): (n_tokens, n) float32, the rows' tokens one row
        after another.
    lengths (numpy.ndarray): each row's length (>= 0), summing to n_tokens.
    layers: per layer, the (forward, backward) weights.
    RETURNS (numpy.ndarray): (n_tokens, 2 * H) the outputs, forward then
        backward, in the order of `tokens`.
    """
    lengths_array = numpy.asarray(lengths, dtype=numpy.int64)
    n_tokens = int(lengths_array.sum())
    if n_tokens == 0:
        hidden = layers[-1][0][1].shape[1] if layers else 0
        return numpy.zeros((0, 2 * hidden), dtype=tokens.dtype)
    # time-major packed order: the rows by decreasing length, step by step
    order = numpy.argsort(-lengths_array, kind="stable")
    sorted_lengths = lengths_array[order]
    T = int(sorted_lengths[0])
    running = (sorted_lengths[None, :] > numpy.arange(T)[:, None]).sum(axis=1)
    row_starts = numpy.cumsum(lengths_array) - lengths_array
    step = numpy.repeat(numpy.arange(T), running)  # each packed token's step
    rank = numpy.arange(n_tokens) - numpy.repeat(numpy.cumsum(running) - running, running)
    rows = order[rank]
    forward_index = row_starts[rows] + step  # packed token -> its token
    backward_index = row_starts[rows] + lengths_array[rows] - 1 - step  # the token read reversed
    step_starts = numpy.concatenate([[0], numpy.cumsum(running)])
    x = tokens
    for forward, backward in layers:
        out = numpy.empty((n_tokens, 2 * forward[1].shape[1]), dtype=tokens.dtype)
        hidden = forward[1].shape[1]
        out[forward_index, :hidden] = _direction(x[forward_index], forward, running, step_starts)
        out[backward_index, hidden:] = _direction(x[backward_index], backward, running, step_starts)
        x = out
    return x


def _direction(
    packed: numpy.ndarray, weights: Direction, running: numpy.ndarray, step_starts: numpy.ndarray
) -> numpy.ndarray:
    """One direction over packed inputs (time-major, longest row first)."""
    weight_ih, weight_hh, bias = weights
    H = weight_hh.shape[1]
    gates_in = packed @ weight_ih.T
    gates_in += bias
    recurrent = numpy.ascontiguousarray(weight_hh.T)
    out = numpy.empty((packed.shape[0], H), dtype=packed.dtype)
    n0 = int(running[0])
    h = numpy.zeros((n0, H), dtype=packed.dtype)
    c = numpy.zeros((n0, H), dtype=packed.dtype)
    gates = numpy.empty((n0, 4 * H), dtype=packed.dtype)
    for t in range(len(running)):
        n, first = int(running[t]), int(step_starts[t])
        if t:
            numpy.matmul(h[:n], recurrent, out=gates[:n])
            gates[:n] += gates_in[first : first + n]
        else:
            gates[:n] = gates_in[first : first + n]
        _cell(gates[:n], c[:n], h[:n])
        out[first : first + n] = h[:n]
    return out


@numba.njit(cache=True, nogil=True, fastmath=False)
def _cell(gates, c, h):  # pragma: no cover - compiled
    """c = f * c + i * g; h = o * tanh(c), in place, from the gates (i, f, g, o)."""
    n, H = h.shape
    for r in range(n):
        for k in range(H):
            i = 1.0 / (1.0 + numpy.exp(-gates[r, k]))
            f = 1.0 / (1.0 + numpy.exp(-gates[r, H + k]))
            g = numpy.tanh(gates[r, 2 * H + k])
            o = 1.0 / (1.0 + numpy.exp(-gates[r, 3 * H + k]))
            c[r, k] = f * c[r, k] + i * g
            h[r, k] = o * numpy.tanh(c[r, k])
