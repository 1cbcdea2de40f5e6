"""The character CNN's prediction on the CPU: one fused loop compiled by Numba.

Pure numpy and Numba, no spaCy. The CNN (char_cnn.py) embeds each byte,
concatenates the vectors of the bytes within `window` of a position, maps that
to `width * nP` Maxout pieces, keeps the best piece of each filter and the
best position of each filter in the word. The map is linear in each byte's
embedding, so what a byte at offset o from a position adds to the pieces is a
row of a table: T[o] = E @ W_o^T, one row per symbol (258), computed once per
call from the current weights. A position's pieces are then the bias plus
2 * window + 1 table rows: (2w + 1) * width * nP additions where the matrix
product takes (2w + 1) * nM * width * nP multiply-adds (32 times fewer with
`cpu_morph_char.cfg`'s CNN, nM = 32), and nothing of size (bytes, width * nP)
is stored: the loop keeps one position's pieces and one word's maxima.

The sums are the same terms in another order, so the vectors equal the matrix
product's to float rounding (tests/test_char_cnn.py). Prediction only: training
runs char_cnn.py's Thinc code, which keeps what its gradients need. The
compiled code is cached on disk (`cache=True`), as numba_viterbi.py's is.
"""
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
    width, n_pieces, n_in = W.shape
    n_vocab, n_embed = E.shape
    n_offsets = n_in // n_embed
    if n_offsets * n_embed != n_in or n_offsets % 2 != 1:
        raise ValueError(f"W's input width {n_in} is not an odd number of embeddings of {n_embed}")
    # tables[o, s, k * width + u]: piece k of filter u from symbol s at offset o - window
    by_offset = W.reshape(width, n_pieces, n_offsets, n_embed).transpose(2, 3, 1, 0)
    tables = numpy.ascontiguousarray(
        numpy.matmul(E, by_offset.reshape(n_offsets, n_embed, n_pieces * width)), dtype=E.dtype
    )
    bias = numpy.ascontiguousarray(b.T.reshape(-1), dtype=E.dtype)
    out = numpy.empty((len(lengths), width), dtype=E.dtype)
    _encode(
        numpy.ascontiguousarray(symbols, dtype=numpy.int64),
        numpy.ascontiguousarray(lengths, dtype=numpy.int64),
        tables,
        bias,
        out,
    )
    return out


@numba.njit(cache=True, nogil=True)
def _encode(symbols, lengths, tables, bias, out):  # pragma: no cover - compiled
    n_offsets = tables.shape[0]
    window = n_offsets // 2
    width = out.shape[1]
    n_pieces = tables.shape[2] // width
    pieces = numpy.empty(tables.shape[2], dtype=tables.dtype)
    start = 0
    for word in range(lengths.shape[0]):
        length = lengths[word]
        best = out[word]
        best[:] = -numpy.inf
        for p in range(length):
            # the offsets whose byte is inside the word (seq2col's zeros add nothing);
            # whole-row array operations, which Numba vectorizes
            first = max(0, window - p)
            numpy.add(bias, tables[first, symbols[start + p + first - window]], pieces)
            for o in range(first + 1, min(n_offsets, length - p + window)):
                pieces += tables[o, symbols[start + p + o - window]]
            # the word's best of each filter over its pieces and positions
            for k in range(n_pieces):
                numpy.maximum(best, pieces[k * width : (k + 1) * width], best)
        start += length
