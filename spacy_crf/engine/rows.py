"""How a batch of docs lies in CRF rows (docs cut into chunks, each chunk a
row), and what both engines' batches return per doc. numpy only: the torch
path (spacy_crf.ml.CRFBatch) and the torch-free engine
(spacy_crf.engine.ArrayCRFBatch) share it."""

from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

import numpy

# (label ids, log probability) of one path
Ranked = Tuple[Tuple[int, ...], float]
# (start, end, type): tokens start..end-1 of a doc, a type index
Span = Tuple[int, int, int]
# (start, end, type, probability)
ScoredSpan = Tuple[int, int, int, float]


@dataclass
class SpanProbabilities:
    """Entity span posteriors of one doc (see `CRFBatch.span_probabilities`).

    given (numpy.ndarray): float64, the probability of each span asked for,
        in the order asked.
    found (List[ScoredSpan]): every span with probability >= the threshold,
        (start, end, type, probability), sorted by start, end and type.
    """

    given: numpy.ndarray = field(default_factory=lambda: numpy.zeros((0,)))
    found: List[ScoredSpan] = field(default_factory=list)


def check_spans(spans: Sequence[Sequence[Span]], doc_lengths: Sequence[int], n_types: int) -> None:
    """Raise ValueError naming the span if one is not (start, end, type) with
    0 <= start < end <= its doc's length and 0 <= type < n_types."""
    if len(spans) != len(doc_lengths):
        raise ValueError(f"spans must hold one list per doc: {len(spans)} lists for {len(doc_lengths)} docs")
    for doc, (doc_spans, n) in enumerate(zip(spans, doc_lengths)):
        for span in doc_spans:
            start, end, kind = span
            if not (0 <= start < end <= n and 0 <= kind < n_types):
                raise ValueError(
                    f"span {tuple(span)} of doc {doc} is not (start, end, type) with "
                    f"0 <= start < end <= {n} (the doc's length) and 0 <= type < {n_types}"
                )


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


def row_layout(pieces: Sequence[Sequence[int]], chunk_size: int) -> Tuple[List[int], List[int], List[int]]:
    """The rows of a batch of docs, each doc read as its consecutive pieces
    (e.g. its sentences), each piece cut by `chunk_lengths`.

    RETURNS (Tuple[List[int], List[int], List[int]]): the docs' lengths, the
        rows' lengths in order, and how many rows each doc has.
    """
    per_doc = [chunk_lengths(doc_pieces, chunk_size) for doc_pieces in pieces]
    doc_lengths = [sum(doc_pieces) for doc_pieces in pieces]
    return doc_lengths, [n for rows in per_doc for n in rows], [len(rows) for rows in per_doc]


def grid_index(lengths: Sequence[int], width: int) -> numpy.ndarray:
    """Flat positions in a (len(lengths), width) grid of every token, in order.

    lengths (Sequence[int]): tokens per row (chunk).
    width (int): the grid's width (the padded length).
    RETURNS (numpy.ndarray): int64 indices into grid.ravel(), one per token.
    """
    row_lengths = numpy.asarray(lengths, dtype="int64")
    total = int(row_lengths.sum())
    rows = numpy.repeat(numpy.arange(len(row_lengths)), row_lengths)
    starts = numpy.repeat(numpy.cumsum(row_lengths) - row_lengths, row_lengths)
    return rows * width + (numpy.arange(total) - starts)


def ranked_per_doc(
    paths: numpy.ndarray,
    valid: numpy.ndarray,
    log_probs: numpy.ndarray,
    row_lengths: Sequence[int],
    rows_per_doc: Sequence[int],
    k: int,
) -> List[List[Ranked]]:
    """Per doc, its k best whole paths from each row's ranked paths.

    paths (numpy.ndarray): (rows, ranks, length) label ids.
    valid (numpy.ndarray): (rows, ranks) whether a rank is a path (a row has
        fewer paths than ranks where its constraints leave fewer).
    log_probs (numpy.ndarray): (rows, ranks) each path's log probability.
    row_lengths (Sequence[int]): each row's tokens.
    rows_per_doc (Sequence[int]): each doc's rows, in order.
    RETURNS (List[List[Ranked]]): per doc, up to k (ids, log prob), best first.
    """
    chunks: List[List[Ranked]] = []
    for row, n in enumerate(row_lengths):
        ranked = [
            (tuple(paths[row, r, :n].tolist()), float(log_probs[row, r]))
            for r in range(paths.shape[1])
            if valid[row, r]
        ]
        chunks.append(ranked if n else [((), 0.0)])
    per_doc, start = [], 0
    for n_rows in rows_per_doc:
        per_doc.append(merge_nbest(chunks[start : start + n_rows], k))
        start += n_rows
    return per_doc


def paths_at_most(k: int, n_labels: int, n_tokens: int) -> int:
    """k, or the number of label paths of `n_tokens` tokens where fewer
    exist (n_labels ** n_tokens): n-best never ranks more than there are."""
    if n_tokens == 0 or n_labels <= 1:
        return min(k, 1)
    n_paths = 1
    for _ in range(n_tokens):
        n_paths *= n_labels
        if n_paths >= k:
            return k
    return n_paths


def merge_nbest(parts: Sequence[Sequence[Ranked]], k: int) -> List[Ranked]:
    """The k best whole paths from the k-best lists of consecutive parts.

    parts (Sequence[Sequence[Ranked]]): per part, its best (ids, log prob)
        pairs; the parts are independent, so a whole path's log probability
        is the sum of its parts'.
    RETURNS (List[Ranked]): up to k pairs, best first.
    """
    best: List[Ranked] = [((), 0.0)]
    for part in parts:
        combined = [(pa + pb, sa + sb) for pa, sa in best for pb, sb in part]
        best = sorted(combined, key=lambda item: -item[1])[:k]
    return best


def spans_in_rows(
    row_lengths: Sequence[int], rows_per_doc: Sequence[int], spans: Sequence[Sequence[Tuple[int, int, int]]]
) -> Tuple[List[Tuple[int, int, int, int]], List[Tuple[int, int]], numpy.ndarray]:
    """Doc spans in the rows (chunks) of a batch.

    row_lengths (Sequence[int]): tokens per row; rows_per_doc (Sequence[int]):
        rows per doc (as `row_layout` gives them).

    spans (Sequence[Sequence[Tuple[int, int, int]]]): per doc, spans
        (start, end exclusive, type) in the doc's tokens.
    RETURNS (Tuple[list, list, ndarray]): the spans that lie within one
        row, as (row, first, last inclusive, type) in the row's tokens
        (a span across a chunk's edge is on no path of any row: left
        out); for each, (doc, index of the span); and each row's first
        token's offset in its doc.
    """
    row_lengths, rows_per_doc = list(row_lengths), list(rows_per_doc)
    first_row = numpy.cumsum([0] + rows_per_doc)[:-1]
    row_offset = numpy.zeros(len(row_lengths), dtype="int64")
    for row, n_rows in zip(first_row, rows_per_doc):
        lengths = row_lengths[row : row + n_rows]
        row_offset[row : row + n_rows] = numpy.cumsum([0] + lengths[:-1])
    inside: List[Tuple[int, int, int, int]] = []
    places: List[Tuple[int, int]] = []
    for doc, doc_spans in enumerate(spans):
        rows = range(first_row[doc], first_row[doc] + rows_per_doc[doc])
        offsets = row_offset[rows.start : rows.stop]
        for j, (start, end, kind) in enumerate(doc_spans):
            row = rows.start + int(numpy.searchsorted(offsets, start, side="right")) - 1
            offset = int(row_offset[row])
            if end - offset <= row_lengths[row]:
                inside.append((row, start - offset, end - 1 - offset, kind))
                places.append((doc, j))
    return inside, places, row_offset
