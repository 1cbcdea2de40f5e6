"""`ArrayCRFBatch`: the model's output for a batch of docs on the torch-free
engine, with the methods of `spacy_crf.ml.CRFBatch` (the torch path's), on
numpy and Numba.

The rows are laid out as CRFBatch lays them out (engine/rows.py), and every
probability is that of the scores at the batch's temperature, as there.
The NLL (calibration), and span probabilities under factored transitions
(which no entity scheme uses), are computed by the torch path's code from
these scores where torch is installed; without torch they raise E050.
"""

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import numpy

from ..errors import Errors, NonFiniteScoresError
from ..optional import require_torch
from . import NEG_INF
from .crf import forward_backward, is_forbidden, nbest_decode
from .crf import marginals as crf_marginals
from .network import ArrayScores
from .rows import Ranked, Span, SpanProbabilities, check_spans, grid_index, paths_at_most, ranked_per_doc, spans_in_rows
from .spans import all_span_log_probs, span_log_probs
from .viterbi import viterbi_decode


def temper(scores: ArrayScores, temperature: float) -> ArrayScores:
    """The scores divided by the temperature, log 0 kept (spacy_crf.ml.crf_batch.temper)."""
    if temperature == 1.0:
        return scores

    def scale(x: numpy.ndarray) -> numpy.ndarray:
        return numpy.where(is_forbidden(x), numpy.float32(NEG_INF), x / numpy.float32(temperature)).astype(x.dtype)

    return scores._replace(
        emissions=scale(scores.emissions),
        transitions=scale(scores.transitions),
        start=scale(scores.start),
        end=scale(scores.end),
    )


@dataclass
class ArrayCRFBatch:
    """CRF scores for a batch of docs, cut into rows (see spacy_crf.ml.CRFBatch).

    scores (ArrayScores): (rows, T, K) emissions, mask and CRF parameters.
    doc_lengths, row_lengths, rows_per_doc: as CRFBatch's.
    temperature (float): tau > 0 of the probabilities.
    """

    scores: ArrayScores
    doc_lengths: List[int]
    row_lengths: List[int]
    rows_per_doc: List[int]
    temperature: float = 1.0

    @classmethod
    def empty(cls, n_docs: int, n_labels: int) -> "ArrayCRFBatch":
        """The batch of n_docs docs without a token (one empty row each)."""
        zeros = numpy.zeros(n_labels, dtype=numpy.float32)
        scores = ArrayScores(
            numpy.zeros((n_docs, 0, n_labels), dtype=numpy.float32),
            numpy.zeros((n_docs, 0), dtype=bool),
            numpy.zeros((n_labels, n_labels), dtype=numpy.float32),
            zeros,
            zeros.copy(),
        )
        return cls(scores, [0] * n_docs, [0] * n_docs, [1] * n_docs)

    def with_temperature(self, temperature: float) -> "ArrayCRFBatch":
        """The same scores and docs, with probabilities at another temperature."""
        return dataclasses.replace(self, temperature=temperature)

    @property
    def tempered(self) -> ArrayScores:
        return temper(self.scores, self.temperature)

    @property
    def n_labels(self) -> int:
        return int(self.scores.emissions.shape[2])

    def _lengths(self) -> numpy.ndarray:
        return self.scores.mask.sum(axis=1)

    def split(self, grid: numpy.ndarray) -> List[numpy.ndarray]:
        """Rows of a (rows, T, ...) array, regrouped per doc in token order."""
        index = grid_index(self.row_lengths, grid.shape[1])
        tokens = grid.reshape(-1, *grid.shape[2:])[index]
        return numpy.split(tokens, numpy.cumsum(self.doc_lengths)[:-1])

    def is_finite(self) -> bool:
        """Whether every score (emissions, transitions, start, end) is finite."""
        s = self.scores
        return all(bool(numpy.isfinite(x).all()) for x in (s.emissions, s.transitions, s.start, s.end))

    def _viterbi(self) -> Tuple[numpy.ndarray, numpy.ndarray]:
        s = self.scores
        return viterbi_decode(s.emissions, self._lengths(), s.transitions, s.start, s.end, s.classes)

    def decode(self) -> List[numpy.ndarray]:
        """The Viterbi label ids of each doc (int64, one per token)."""
        return self.split(self._viterbi()[0])

    def decode_with_confidence(self) -> Tuple[List[numpy.ndarray], List[numpy.ndarray]]:
        """The Viterbi label ids of each doc and each label's marginal probability."""
        if self.scores.emissions.shape[1] == 0:
            return self.decode(), [numpy.zeros((0,)) for _ in self.doc_lengths]
        paths, _ = self._viterbi()
        confidence = numpy.take_along_axis(self._token_marginals(), paths[:, :, None], axis=2)[:, :, 0]
        return self.split(paths), [c.astype(numpy.float64) for c in self.split(confidence)]

    def marginals(self) -> List[numpy.ndarray]:
        """Per doc, the (n_tokens, K) float32 marginal probability of every label."""
        if self.scores.emissions.shape[1] == 0:
            return [numpy.zeros((0, self.n_labels), dtype="float32") for _ in self.doc_lengths]
        return self.split(self._token_marginals())

    def _token_marginals(self) -> numpy.ndarray:
        """(rows, T, K) marginals at the batch's temperature, each real
        token's row divided by its sum (as CRFBatch's); padded rows 0."""
        s = self.tempered
        probs = crf_marginals(s.emissions, s.mask, s.transitions, s.start, s.end)
        probs /= numpy.maximum(probs.sum(-1, keepdims=True), numpy.finfo(probs.dtype).tiny)
        if not bool(numpy.isfinite(probs).all()):
            raise NonFiniteScoresError(Errors.E034.format(n_docs=len(self.doc_lengths), n_tokens=sum(self.doc_lengths)))
        return probs

    def uncertainty(self) -> List[Tuple[float, numpy.ndarray]]:
        """Per doc, the log probability of its Viterbi path and each token's
        marginal entropy (nats), as CRFBatch.uncertainty."""
        if self.scores.emissions.shape[1] == 0:
            return [(0.0, numpy.zeros((0,))) for _ in self.doc_lengths]
        _, best = self._viterbi()
        s = self.tempered
        alphas, betas, log_z = forward_backward(s.emissions, s.mask, s.transitions, s.start, s.end)
        log_probs = numpy.where(s.mask[:, :, None], alphas + betas - log_z[:, None, None], 0.0).astype(numpy.float64)
        entropy = -(numpy.exp(log_probs) * log_probs).sum(-1)
        row_log_probs = numpy.minimum(best.astype(numpy.float64) / self.temperature - log_z.astype(numpy.float64), 0.0)
        results, start = [], 0
        for n_rows, doc_entropy in zip(self.rows_per_doc, self.split(entropy)):
            results.append((float(row_log_probs[start : start + n_rows].sum()), doc_entropy))
            start += n_rows
        return results

    def nbest(self, k: int) -> List[List[Ranked]]:
        """Per doc, its k most probable label paths with their log probabilities."""
        s = self.scores
        ranked_k = paths_at_most(k, s.emissions.shape[2], s.emissions.shape[1])
        paths, values = nbest_decode(s.emissions, s.mask, s.transitions, s.start, s.end, ranked_k)
        t = self.tempered
        _, _, log_z = forward_backward(t.emissions, t.mask, t.transitions, t.start, t.end)
        valid = values > NEG_INF / 2
        log_probs = values / self.temperature - log_z[:, None]
        return ranked_per_doc(paths, valid, log_probs, self.row_lengths, self.rows_per_doc, k)

    def to_torch(self) -> Any:
        """The same batch as the torch path's CRFBatch (needs torch: E050)."""
        require_torch("The NLL of gold labels (calibration)")
        import torch

        from ..ml.crf_batch import CRFBatch
        from ..nn import CRFScores

        s = self.scores
        classes = None if s.classes is None else torch.from_numpy(s.classes)
        scores = CRFScores(
            torch.from_numpy(s.emissions),
            torch.from_numpy(s.mask),
            torch.from_numpy(s.transitions),
            torch.from_numpy(s.start),
            torch.from_numpy(s.end),
            classes,
        )
        return CRFBatch(scores, self.doc_lengths, self.row_lengths, self.rows_per_doc, self.temperature)

    def span_probabilities(
        self,
        patterns: Sequence[Sequence[int]],
        spans: Optional[Sequence[Sequence[Span]]] = None,
        *,
        threshold: Optional[float] = None,
        max_length: Optional[int] = None,
    ) -> List[SpanProbabilities]:
        """Per doc, the exact posterior probability of entity spans, as
        CRFBatch.span_probabilities (same arguments and results), on numpy."""
        pattern_array = numpy.asarray(patterns, dtype="int64").reshape(-1, 5)
        n_types = len(pattern_array)
        given: Sequence[Sequence[Span]] = [[] for _ in self.doc_lengths] if spans is None else spans
        check_spans(given, self.doc_lengths, n_types)
        if threshold is not None and not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        if self.scores.classes is not None:  # factored transitions: the torch path's algorithms
            found: List[SpanProbabilities] = self.to_torch().span_probabilities(
                patterns, spans, threshold=threshold, max_length=max_length
            )
            return found
        inside, places, row_offset = spans_in_rows(self.row_lengths, self.rows_per_doc, given)
        row_doc = numpy.repeat(numpy.arange(len(self.doc_lengths)), self.rows_per_doc)
        results = [SpanProbabilities(numpy.zeros((len(doc_spans),))) for doc_spans in given]
        s = self.tempered
        search = threshold is not None and n_types > 0 and s.emissions.shape[1] > 0
        if not inside and not search:
            return results
        passes = forward_backward(s.emissions, s.mask, s.transitions, s.start, s.end)
        if inside:
            span_array = numpy.asarray(inside, dtype="int64")
            longest = int((span_array[:, 2] - span_array[:, 1] + 1).max())
            log_probs = span_log_probs(
                s.emissions, s.mask, s.transitions, s.end, passes, span_array, pattern_array, longest
            )
            for (doc, j), prob in zip(places, numpy.exp(log_probs.astype(numpy.float64)).tolist()):
                results[doc].given[j] = prob
        if search:
            assert threshold is not None  # search is only with a threshold
            min_log_prob = math.log(threshold)
            all_log_probs = all_span_log_probs(
                s.emissions, s.mask, s.transitions, s.end, passes, pattern_array, max_length, min_log_prob
            )
            hits = numpy.argwhere(all_log_probs >= min_log_prob)  # row, start, size - 1, type; in order
            values = numpy.exp(all_log_probs[tuple(hits.T)].astype(numpy.float64))
            for (row, start, size, kind), prob in zip(hits.tolist(), values.tolist()):
                begin = int(row_offset[row]) + start
                results[row_doc[row]].found.append((begin, begin + size + 1, kind, prob))
        return results

    def negative_log_likelihood(self, gold: Sequence[numpy.ndarray], excluded: Sequence[numpy.ndarray]) -> float:
        """CRFBatch.negative_log_likelihood of these scores (needs torch: E050)."""
        return float(self.to_torch().negative_log_likelihood(gold, excluded))
