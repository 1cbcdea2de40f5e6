"""Long docs are cut into chunks before the BiLSTM-CRF: the batch stays wide,
the time loop short and memory bounded. A doc no longer than `chunk_size` is one
chunk, so its result equals the unchunked one.

Chunks are rows of the padded batch, in doc order; these helpers map between
docs, chunks and positions in that (rows, width) grid. Pure numpy.
"""
from typing import List, Sequence

import numpy


def chunk_lengths(doc_lengths: Sequence[int], chunk_size: int) -> List[int]:
    """Lengths of the chunks of each doc, in order; every doc has at least one.

    doc_lengths (Sequence[int]): tokens per doc.
    chunk_size (int): the longest chunk; 0 or less means never cut.
    RETURNS (List[int]): a doc of n > chunk_size tokens becomes ceil(n /
        chunk_size) chunks of near-equal length; an empty doc one empty chunk.
    """
    lengths: List[int] = []
    for n in doc_lengths:
        if chunk_size <= 0 or n <= chunk_size:
            lengths.append(n)
            continue
        pieces = -(-n // chunk_size)
        base, extra = divmod(n, pieces)
        lengths.extend(base + 1 if i < extra else base for i in range(pieces))
    return lengths


def grid_index(lengths: Sequence[int], width: int) -> numpy.ndarray:
    """Flat positions in a (len(lengths), width) grid of every token, in order.

    lengths (Sequence[int]): tokens per row (chunk).
    width (int): the grid's width (the padded length).
    RETURNS (numpy.ndarray): int64 indices into grid.ravel(), one per token.
    """
    lengths = numpy.asarray(lengths, dtype="int64")
    total = int(lengths.sum())
    rows = numpy.repeat(numpy.arange(len(lengths)), lengths)
    starts = numpy.repeat(numpy.cumsum(lengths) - lengths, lengths)
    return rows * width + (numpy.arange(total) - starts)
