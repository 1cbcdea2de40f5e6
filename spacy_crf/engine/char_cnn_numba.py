"""The character CNN on the CPU: loops compiled by Numba, for prediction and training.

Pure numpy and Numba, no spaCy. The CNN (char_cnn.py) embeds each byte,
concatenates the vectors of the bytes within `window` of a position, maps that
to `width * nP` Maxout pieces, keeps the best piece of each filter and the
best position of each filter in the word. The map is linear in each byte's
embedding, so what a byte at offset o from a position adds to the pieces is a
row of a table: T[o] = E @ W_o^T, one row per symbol of the batch, computed
once per call from the current weights. A position's pieces are then the bias
plus 2 * window + 1 table rows: (2w + 1) * width * nP additions where the
matrix product takes (2w + 1) * nM * width * nP multiply-adds (nM = 32 in
`cpu_morph_char.cfg`), and nothing of size (bytes, width * nP) is stored: the
loop keeps one position's pieces and one word's maxima.

In training the loop also keeps, for each word and filter, the position and
piece its value came from (the first best, as Thinc's Maxout and reduce_max
choose). A filter's gradient reaches only the bias and the table rows of the
bytes around that position: the tables' gradient is built by scatter-adds,
then the gradients of E and W are small products with it.

The sums are the same terms in another order, so vectors and gradients equal
Thinc's to float rounding (tests/ml/test_char_cnn.py). The compiled code is
cached on disk (`cache=True`), as numba_viterbi.py's is.
"""

from typing import Callable, NamedTuple, Tuple

import numba
import numpy


def encode_words(
    symbols: numpy.ndarray, lengths: numpy.ndarray, E: numpy.ndarray, W: numpy.ndarray, b: numpy.ndarray
) -> numpy.ndarray:
    """Each distinct word's CNN vector.

    symbols (ndarray): the words' symbol ids one after another (int).
    lengths (ndarray): the number of symbols of each word (int, each >= 1).
    E (ndarray): (nV, nM) symbol embeddings.
    W (ndarray): (width, nP, (2 * window + 1) * nM) the Maxout's weights, in
        Thinc's layout (seq2col's columns: offset -window first).
    b (ndarray): (width, nP) the Maxout's bias.
    RETURNS (ndarray): (n_words, width), in E's dtype.
    """
    batch = _setup(symbols, lengths, E, W, b)
    out = numpy.empty((len(batch.lengths), W.shape[0]), dtype=E.dtype)
    _encode(batch.local, batch.lengths, batch.tables, batch.bias, out)
    return out


def encode_words_for_training(
    symbols: numpy.ndarray, lengths: numpy.ndarray, E: numpy.ndarray, W: numpy.ndarray, b: numpy.ndarray
) -> Tuple[numpy.ndarray, Callable[[numpy.ndarray], Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]]]:
    """`encode_words`, and a backprop that gives the gradients of E, W and b
    (see the module's docstring).

    RETURNS: (words (n_words, width), backprop(d_words) -> (dE, dW, db)).
    """
    width, n_pieces, _ = W.shape
    n_embed = E.shape[1]
    batch = _setup(symbols, lengths, E, W, b)
    # the backprop keeps these, not the tables
    used, local, lengths, E_used, by_offset = batch.used, batch.local, batch.lengths, batch.E_used, batch.by_offset
    tables_shape = batch.tables.shape
    out = numpy.empty((len(lengths), width), dtype=E.dtype)
    position = numpy.empty((len(lengths), width), dtype=numpy.int32)
    piece = numpy.empty((len(lengths), width), dtype=numpy.int32)
    _encode_with_winners(local, lengths, batch.tables, batch.bias, out, position, piece)
    del batch

    def backprop(d_words: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        d_tables = numpy.zeros(tables_shape, dtype=E.dtype)  # (n_offsets, n_used, nP * width)
        d_bias = numpy.zeros((n_pieces * width,), dtype=E.dtype)
        _scatter(numpy.ascontiguousarray(d_words, dtype=E.dtype), local, lengths, position, piece, d_tables, d_bias)
        dE = numpy.zeros_like(E)
        dE[used] = numpy.matmul(d_tables, by_offset.transpose(0, 2, 1)).sum(axis=0)
        d_by_offset = numpy.matmul(E_used.T, d_tables)  # (n_offsets, nM, nP * width)
        n_offsets = d_by_offset.shape[0]
        dW = d_by_offset.reshape(n_offsets, n_embed, n_pieces, width).transpose(3, 2, 0, 1)
        dW = numpy.ascontiguousarray(dW.reshape(W.shape), dtype=W.dtype)
        db = numpy.ascontiguousarray(d_bias.reshape(n_pieces, width).T, dtype=b.dtype)
        return dE, dW, db

    return out, backprop


class _Batch(NamedTuple):
    """What the loops (and the backprop) read of one batch."""

    used: numpy.ndarray  # the distinct symbols of the batch, sorted
    local: numpy.ndarray  # each symbol as its index among them (int64)
    lengths: numpy.ndarray  # the words' lengths (int64)
    E_used: numpy.ndarray  # (n_used, nM) those symbols' embeddings
    by_offset: numpy.ndarray  # (n_offsets, nM, nP * width) W by offset
    tables: numpy.ndarray  # (n_offsets, n_used, nP * width) E_used @ by_offset
    bias: numpy.ndarray  # (nP * width,) the bias as a table row


def _setup(
    symbols: numpy.ndarray, lengths: numpy.ndarray, E: numpy.ndarray, W: numpy.ndarray, b: numpy.ndarray
) -> _Batch:
    """The batch's symbols, tables and bias as the loops read them."""
    n_embed = E.shape[1]
    n_in = W.shape[2]
    n_offsets = n_in // n_embed
    if n_offsets * n_embed != n_in or n_offsets % 2 != 1:
        raise ValueError(f"W's input width {n_in} is not an odd number of embeddings of {n_embed}")
    used, local = numpy.unique(symbols, return_inverse=True)
    local = numpy.ascontiguousarray(local.reshape(-1), dtype=numpy.int64)
    lengths = numpy.ascontiguousarray(lengths, dtype=numpy.int64)
    E_used = E[used]
    by_offset = _by_offset(W, n_embed)
    # tables[o, s, k * width + u]: piece k of filter u from symbol s at offset o - window
    tables = numpy.ascontiguousarray(numpy.matmul(E_used, by_offset), dtype=E.dtype)
    bias = numpy.ascontiguousarray(b.T.reshape(-1), dtype=E.dtype)
    return _Batch(used, local, lengths, E_used, by_offset, tables, bias)


def _by_offset(W: numpy.ndarray, n_embed: int) -> numpy.ndarray:
    """W as (n_offsets, nM, nP * width), column k * width + u for piece k of filter u."""
    width, n_pieces, n_in = W.shape
    n_offsets = n_in // n_embed
    by_offset = W.reshape(width, n_pieces, n_offsets, n_embed).transpose(2, 3, 1, 0)
    return by_offset.reshape(n_offsets, n_embed, n_pieces * width)


@numba.njit(cache=True, nogil=True, inline="always")
def _position_pieces(symbols, start, length, p, tables, bias, pieces):  # pragma: no cover - compiled
    """The pieces of position p of the word at symbols[start:start + length]:
    the bias plus the table rows of the offsets whose byte is inside the word
    (seq2col's zeros add nothing), as whole-row array operations, which
    Numba vectorizes."""
    n_offsets = tables.shape[0]
    window = n_offsets // 2
    first = max(0, window - p)
    numpy.add(bias, tables[first, symbols[start + p + first - window]], pieces)
    for o in range(first + 1, min(n_offsets, length - p + window)):
        pieces += tables[o, symbols[start + p + o - window]]


@numba.njit(cache=True, nogil=True)
def _encode(symbols, lengths, tables, bias, out):  # pragma: no cover - compiled
    """Each word's best of each filter over its pieces and positions into out.
    A NaN piece never wins, in prediction as in training (Thinc's Maxout and
    reduce_max start from the first piece and position, so a NaN there passes
    on: the two differ only once the weights hold NaN)."""
    width = out.shape[1]
    n_pieces = tables.shape[2] // width
    pieces = numpy.empty(tables.shape[2], dtype=tables.dtype)
    best = numpy.empty(width, dtype=tables.dtype)
    start = 0
    for word in range(lengths.shape[0]):
        length = lengths[word]
        best[:] = -numpy.inf
        for p in range(length):
            _position_pieces(symbols, start, length, p, tables, bias, pieces)
            for k in range(n_pieces):
                for u in range(width):
                    v = pieces[k * width + u]
                    best[u] = v if v > best[u] else best[u]
        out[word] = best
        start += length


@numba.njit(cache=True, nogil=True)
def _encode_with_winners(symbols, lengths, tables, bias, out, position, piece):  # pragma: no cover - compiled
    """`_encode`, keeping for each word and filter where its value came from:
    the first best position, then its first best piece (int32, so that the
    comparisons vectorize at float32's width)."""
    width = out.shape[1]
    n_pieces = tables.shape[2] // width
    pieces = numpy.empty(tables.shape[2], dtype=tables.dtype)
    best = numpy.empty(width, dtype=tables.dtype)
    best_position = numpy.empty(width, dtype=numpy.int32)
    best_piece = numpy.empty(width, dtype=numpy.int32)
    start = 0
    for word in range(lengths.shape[0]):
        length = lengths[word]
        best[:] = -numpy.inf
        best_position[:] = 0
        best_piece[:] = 0
        for p in range(length):
            _position_pieces(symbols, start, length, p, tables, bias, pieces)
            at = numpy.int32(p)
            for k in range(n_pieces):
                which = numpy.int32(k)
                for u in range(width):
                    v = pieces[k * width + u]
                    better = v > best[u]
                    best[u] = v if better else best[u]
                    best_position[u] = at if better else best_position[u]
                    best_piece[u] = which if better else best_piece[u]
        out[word] = best
        position[word] = best_position
        piece[word] = best_piece
        start += length


@numba.njit(cache=True, nogil=True)
def _scatter(d_words, symbols, lengths, position, piece, d_tables, d_bias):  # pragma: no cover - compiled
    """Each word's filter gradients into the bias and table rows its value came from."""
    n_offsets = d_tables.shape[0]
    window = n_offsets // 2
    width = d_words.shape[1]
    start = 0
    for word in range(lengths.shape[0]):
        length = lengths[word]
        for u in range(width):
            g = d_words[word, u]
            p = position[word, u]
            column = piece[word, u] * width + u
            d_bias[column] += g
            for o in range(max(0, window - p), min(n_offsets, length - p + window)):
                d_tables[o, symbols[start + p + o - window], column] += g
        start += length
