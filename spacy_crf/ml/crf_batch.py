"""The model's output for a batch of docs: padded CRF rows that know their docs.

Long docs are cut into chunks before the BiLSTM-CRF (bounded memory, a short
time loop); each chunk is a row of the padded batch, in doc order. A `CRFBatch`
carries the rows' scores with the doc and chunk lengths, so it alone maps rows
back to docs: every method returns one host array (or list) per doc, after one
device-to-host copy per batch.
"""
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy
import torch

from ..nn import NEG_INF, CRFScores, log_partition, marginals, nbest_decode, viterbi_decode

# (label ids, log probability) of one path
Ranked = Tuple[Tuple[int, ...], float]


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


@dataclass
class CRFBatch:
    """CRF scores for a batch of docs, cut into rows.

    scores (CRFScores): (rows, T, K) emissions and mask, with the CRF
        parameters; in a gradient, the gradients (None where fixed).
    doc_lengths (List[int]): tokens per doc.
    row_lengths (List[int]): tokens per row, the rows of each doc in order
        (an empty doc has one empty row).
    rows_per_doc (List[int]): how many rows each doc has.
    """

    scores: CRFScores
    doc_lengths: List[int]
    row_lengths: List[int]
    rows_per_doc: List[int]

    @classmethod
    def from_docs(cls, scores: CRFScores, doc_lengths: Sequence[int], chunk_size: int) -> "CRFBatch":
        """The batch of docs cut by `chunk_lengths(doc_lengths, chunk_size)`."""
        per_doc = [chunk_lengths([n], chunk_size) for n in doc_lengths]
        return cls(scores, list(doc_lengths), [n for rows in per_doc for n in rows], [len(rows) for rows in per_doc])

    @classmethod
    def empty(cls, n_docs: int, n_labels: int, device: torch.device) -> "CRFBatch":
        """The batch of n_docs docs without a token: one empty row each, and
        zero scores of the right shapes, so every method works unchanged."""
        zeros = torch.zeros(n_labels, device=device)
        scores = CRFScores(
            torch.zeros(n_docs, 0, n_labels, device=device),
            torch.zeros(n_docs, 0, dtype=torch.bool, device=device),
            torch.zeros(n_labels, n_labels, device=device),
            zeros,
            zeros.clone(),
        )
        return cls(scores, [0] * n_docs, [0] * n_docs, [1] * n_docs)

    def like(self, scores: CRFScores) -> "CRFBatch":
        """A batch of other scores (e.g. their gradient) for the same docs."""
        return CRFBatch(scores, self.doc_lengths, self.row_lengths, self.rows_per_doc)

    @property
    def n_labels(self) -> int:
        return self.scores.emissions.shape[2]

    def split(self, grid: numpy.ndarray) -> List[numpy.ndarray]:
        """Rows of a (rows, T, ...) host array, regrouped per doc in token order."""
        index = grid_index(self.row_lengths, grid.shape[1])
        tokens = grid.reshape(-1, *grid.shape[2:])[index]
        return numpy.split(tokens, numpy.cumsum(self.doc_lengths)[:-1])

    def to_grid(self, per_doc: Sequence[numpy.ndarray], fill: int = -1) -> torch.Tensor:
        """The inverse of `split` for one int64 value per token: a (rows, T)
        tensor on the scores' device, `fill` at padded steps."""
        grid = numpy.full(tuple(self.scores.mask.shape), fill, dtype="int64")
        flat = numpy.concatenate(per_doc) if len(per_doc) else numpy.zeros((0,), dtype="int64")
        grid.ravel()[grid_index(self.row_lengths, grid.shape[1])] = flat
        return torch.from_numpy(grid).to(self.scores.emissions.device)

    def is_finite(self) -> bool:
        """Whether every score (emissions, transitions, start, end) is finite."""
        emissions, _, transitions, start, end = self.scores
        return all(bool(torch.isfinite(t).all()) for t in (emissions, transitions, start, end))

    def decode(self) -> List[numpy.ndarray]:
        """The Viterbi label ids of each doc (int64, one per token)."""
        paths, _ = viterbi_decode(self.scores)
        return self.split(paths.cpu().numpy())  # one device-to-host copy

    def decode_with_confidence(self) -> Tuple[List[numpy.ndarray], List[numpy.ndarray]]:
        """The Viterbi label ids of each doc and each label's marginal probability."""
        if self.scores.emissions.shape[1] == 0:
            return self.decode(), [numpy.zeros((0,)) for _ in self.doc_lengths]
        paths, _ = viterbi_decode(self.scores)
        confidence = marginals(self.scores).gather(2, paths.unsqueeze(2)).squeeze(2)
        both = torch.stack([paths.to(confidence.dtype), confidence], dim=2).double()
        per_doc = self.split(both.cpu().numpy())  # one device-to-host copy
        return [d[:, 0].astype("int64") for d in per_doc], [d[:, 1] for d in per_doc]

    def marginals(self) -> List[numpy.ndarray]:
        """Per doc, the (n_tokens, K) float32 marginal probability of every label."""
        if self.scores.emissions.shape[1] == 0:
            return [numpy.zeros((0, self.n_labels), dtype="float32") for _ in self.doc_lengths]
        return self.split(marginals(self.scores).float().cpu().numpy())

    def nbest(self, k: int) -> List[List[Ranked]]:
        """Per doc, its k most probable label paths with their log probabilities."""
        paths, values = nbest_decode(self.scores, k)
        with torch.no_grad():
            log_z = log_partition(self.scores)
        # one copy for the paths, one for the scores and log Z
        paths = paths.cpu().numpy()
        host = torch.cat([values, log_z[:, None].to(values.dtype)], dim=1).cpu().numpy()
        values, log_z = host[:, :-1], host[:, -1:]
        valid, log_probs = values > NEG_INF / 2, values - log_z
        chunks: List[List[Ranked]] = []
        for row, n in enumerate(self.row_lengths):
            ranked = [
                (tuple(paths[row, r, :n].tolist()), float(log_probs[row, r]))
                for r in range(paths.shape[1])
                if valid[row, r]
            ]
            chunks.append(ranked if n else [((), 0.0)])
        per_doc = []
        start = 0
        for n_rows in self.rows_per_doc:
            per_doc.append(merge_nbest(chunks[start : start + n_rows], k))
            start += n_rows
        return per_doc

