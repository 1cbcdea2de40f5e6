"""A bidirectional LSTM over a batch of rows, for prediction (numpy and Numba, no torch).

It computes what torch's `nn.LSTM` computes over the packed rows (gates in
torch's order: input, forget, cell, output; both biases): the rows, sorted by
decreasing length, run one step at a time, each step over the rows still
running (a prefix of them), as a PackedSequence runs; the backward direction
reads each row reversed within its length. Each step is one matrix product
(numpy's BLAS) and a few whole-array passes over the gates (numpy's SIMD
tanh); the input products of every step are one matrix product ahead of the
loop.

sigmoid(x) = (1 + tanh(x / 2)) / 2, so the weights arrive with the rows of the
input, forget and output gates halved (`halved_gates`: exact, a power of
two), and one tanh over all four gates gives every activation.
"""

from typing import List, Tuple

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


def halved_gates(weight_ih: numpy.ndarray, weight_hh: numpy.ndarray, bias: numpy.ndarray) -> Direction:
    """One direction's weights (torch's layout, gates i, f, g, o) with the
    rows of the i, f and o gates halved, as `_direction` reads them."""
    H = weight_hh.shape[1]
    scale = numpy.full((4 * H, 1), 0.5, dtype=weight_ih.dtype)
    scale[2 * H : 3 * H] = 1.0
    return weight_ih * scale, weight_hh * scale, bias * scale[:, 0]


def _direction(
    packed: numpy.ndarray, weights: Direction, running: numpy.ndarray, step_starts: numpy.ndarray
) -> numpy.ndarray:
    """One direction over packed inputs (time-major, longest row first),
    with `halved_gates` weights."""
    weight_ih, weight_hh, bias = weights
    H = weight_hh.shape[1]
    gates_in = packed @ weight_ih.T
    gates_in += bias
    recurrent = numpy.ascontiguousarray(weight_hh.T)
    out = numpy.empty((packed.shape[0], H), dtype=packed.dtype)
    n0 = int(running[0])
    c = numpy.zeros((n0, H), dtype=packed.dtype)
    gates = numpy.empty((n0, 4 * H), dtype=packed.dtype)
    h = numpy.zeros((0, H), dtype=packed.dtype)
    for t in range(len(running)):
        n, first = int(running[t]), int(step_starts[t])
        g = gates[:n]
        if t:
            numpy.matmul(h[:n], recurrent, out=g)
            g += gates_in[first : first + n]
        else:
            g[...] = gates_in[first : first + n]
        numpy.tanh(g, out=g)
        _sigmoid_from_tanh(g[:, : 2 * H])
        _sigmoid_from_tanh(g[:, 3 * H :])
        state = c[:n]
        state *= g[:, H : 2 * H]  # f * c
        g[:, :H] *= g[:, 2 * H : 3 * H]  # i * g
        state += g[:, :H]
        h = out[first : first + n]
        numpy.tanh(state, out=h)
        h *= g[:, 3 * H :]  # o * tanh(c)
    return out


def _sigmoid_from_tanh(t: numpy.ndarray) -> None:
    """tanh(x / 2) -> sigmoid(x), in place."""
    t *= 0.5
    t += 0.5
