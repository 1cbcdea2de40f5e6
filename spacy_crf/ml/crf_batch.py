"""The model's output for a batch of docs: padded CRF rows that know their docs.

Long docs are cut into chunks before the BiLSTM-CRF (bounded memory, a short
time loop); each chunk is a row of the padded batch, in doc order. A `CRFBatch`
carries the rows' scores with the doc and chunk lengths, so it alone maps rows
back to docs: every method returns one host array (or list) per doc, after one
device-to-host copy per batch.

A batch also carries the temperature of its probabilities (see `temper`):
decoding reads the scores as they are, every probability (marginals,
confidences, span posteriors, n-best and best-path probabilities, entropies,
the NLL) the tempered scores, so a temperature never changes a decoded path.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple, Union

import numpy

from ..engine.rows import (  # noqa: F401  (re-exported: spacy_crf.ml.crf_batch's names)
    Ranked,
    ScoredSpan,
    Span,
    SpanProbabilities,
    check_spans,
    chunk_lengths,
    grid_index,
    merge_nbest,
    paths_at_most,
    ranked_per_doc,
    row_layout,
    spans_in_rows,
)
from ..errors import Errors, NonFiniteScoresError
from ..optional import has_torch

if TYPE_CHECKING or has_torch():
    import torch

    from ..nn import (
        NEG_INF,
        CRFScores,
        all_span_log_probs,
        crf_loss,
        forward_backward,
        log_partition,
        marginals,
        nbest_decode,
        span_log_probs,
        viterbi_decode,
        viterbi_decode_packed,
    )
    from ..nn.packed import PackedScores


def temper(scores: CRFScores, temperature: float) -> CRFScores:
    """The scores of P_tau(y | x), proportional to exp(Score(x, y) / tau):
    emissions, transitions, start and end divided by the temperature.

    A forbidden entry (NEG_INF, log 0) stays NEG_INF, so a path the
    constraints rule out keeps probability exactly 0; a class-factored matrix
    stays factored (it is scaled as a whole), and the `classes` field is kept.
    Dividing by tau > 0 keeps the order of every two paths' scores, so the
    Viterbi path and the n-best order are those of the scores themselves.

    scores (CRFScores): the scores; the mask and classes are kept as they are.
    temperature (float): tau > 0; 1.0 returns `scores` itself.
    RETURNS (CRFScores): the tempered scores, in the scores' dtype.
    """
    if temperature == 1.0:
        return scores

    def scale(x: torch.Tensor) -> torch.Tensor:
        return torch.where(x > NEG_INF / 2, x / temperature, torch.full_like(x, NEG_INF))

    emissions, _, transitions, start, end, _ = scores
    return scores._replace(
        emissions=scale(emissions), transitions=scale(transitions), start=scale(start), end=scale(end)
    )


@dataclass
class CRFBatch:
    """CRF scores for a batch of docs, cut into rows.

    raw (Union[CRFScores, PackedScores]): the network's output: (rows, T,
        K) emissions and mask, with the CRF parameters (in a gradient, the
        gradients, None where fixed); in prediction on the CPU, the emissions
        may be packed (see `spacy_crf.nn.packed`): `decode` reads them as
        they are, `scores` pads them at its first use.
    doc_lengths (List[int]): tokens per doc.
    row_lengths (List[int]): tokens per row, the rows of each doc in order
        (an empty doc has one empty row).
    rows_per_doc (List[int]): how many rows each doc has.
    temperature (float): tau > 0 of the probabilities: every method but the
        decoding reads `tempered` (see `temper`); 1.0 is the model's own.
    """

    raw: Union[CRFScores, PackedScores]
    doc_lengths: List[int]
    row_lengths: List[int]
    rows_per_doc: List[int]
    temperature: float = 1.0

    @property
    def scores(self) -> CRFScores:
        """The scores with padded (rows, T, K) emissions (padded once, if
        packed: the copies of `with_temperature` share the padding)."""
        if isinstance(self.raw, PackedScores):
            self.raw = self.raw.padded()
        return self.raw

    @classmethod
    def from_docs(
        cls, scores: Union[CRFScores, PackedScores], doc_lengths: Sequence[int], chunk_size: int
    ) -> "CRFBatch":
        """The batch of docs cut by `chunk_lengths(doc_lengths, chunk_size)`."""
        return cls.from_pieces(scores, [[n] for n in doc_lengths], chunk_size)

    @classmethod
    def from_pieces(
        cls, scores: Union[CRFScores, PackedScores], pieces: Sequence[Sequence[int]], chunk_size: int
    ) -> "CRFBatch":
        """The batch of docs, each read as its consecutive pieces (e.g. its
        sentences: per doc, their lengths): `row_layout`."""
        return cls(scores, *row_layout(pieces, chunk_size))

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
        return CRFBatch(scores, self.doc_lengths, self.row_lengths, self.rows_per_doc, self.temperature)

    def with_temperature(self, temperature: float) -> "CRFBatch":
        """The same scores and docs, with probabilities at another temperature."""
        return dataclasses.replace(self, temperature=temperature)

    @property
    def tempered(self) -> CRFScores:
        """The scores the probabilities come from: `temper(scores, temperature)`,
        the scores themselves at temperature 1."""
        return temper(self.scores, self.temperature)

    @property
    def n_labels(self) -> int:
        if isinstance(self.raw, PackedScores):
            return self.raw.n_labels
        return self.raw.emissions.shape[2]

    def split(self, grid: numpy.ndarray) -> List[numpy.ndarray]:
        """Rows of a (rows, T, ...) host array, regrouped per doc in token order."""
        index = grid_index(self.row_lengths, grid.shape[1])
        tokens = grid.reshape(-1, *grid.shape[2:])[index]
        return numpy.split(tokens, numpy.cumsum(self.doc_lengths)[:-1])

    def to_grid(self, per_doc: Sequence[numpy.ndarray], fill: int = -1) -> torch.Tensor:
        """The inverse of `split` for one int64 value per token: a (rows, T)
        tensor on the scores' device, `fill` at padded steps."""
        mask = self.raw.mask
        grid = numpy.full(tuple(mask.shape), fill, dtype="int64")
        flat = numpy.concatenate(per_doc) if len(per_doc) else numpy.zeros((0,), dtype="int64")
        grid.ravel()[grid_index(self.row_lengths, grid.shape[1])] = flat
        return torch.from_numpy(grid).to(mask.device)

    def is_finite(self) -> bool:
        """Whether every score (emissions, transitions, start, end) is
        finite; packed emissions are read as they are (one host sync)."""
        raw = self.raw
        emissions = raw.data if isinstance(raw, PackedScores) else raw.emissions
        tensors = [t for t in (emissions, raw.transitions, raw.start, raw.end) if t is not None]
        return bool(torch.stack([torch.isfinite(t).all() for t in tensors]).all())

    def decode(self) -> List[numpy.ndarray]:
        """The Viterbi label ids of each doc (int64, one per token)."""
        if isinstance(self.raw, PackedScores):
            paths, _ = viterbi_decode_packed(self.raw)
        else:
            paths, _ = viterbi_decode(self.raw)
        return self.split(paths.cpu().numpy())  # one device-to-host copy

    def decode_with_confidence(self) -> Tuple[List[numpy.ndarray], List[numpy.ndarray]]:
        """The Viterbi label ids of each doc and each label's marginal probability."""
        if self.scores.emissions.shape[1] == 0:
            return self.decode(), [numpy.zeros((0,)) for _ in self.doc_lengths]
        paths, _ = viterbi_decode(self.scores)
        confidence = self._token_marginals().gather(2, paths.unsqueeze(2)).squeeze(2)
        both = torch.stack([paths.to(confidence.dtype), confidence], dim=2).double()
        per_doc = self.split(both.cpu().numpy())  # one device-to-host copy
        return [d[:, 0].astype("int64") for d in per_doc], [d[:, 1] for d in per_doc]

    def marginals(self) -> List[numpy.ndarray]:
        """Per doc, the (n_tokens, K) float32 marginal probability of every label."""
        if self.scores.emissions.shape[1] == 0:
            return [numpy.zeros((0, self.n_labels), dtype="float32") for _ in self.doc_lengths]
        return self.split(self._token_marginals().float().cpu().numpy())

    def _token_marginals(self) -> torch.Tensor:
        """(rows, T, K) marginals at the batch's temperature, each real token's
        row divided by its sum: in float32, exp(alpha + beta - log Z) carries
        the rounding of sums over the whole row (up to ~1e-3 with scores in the
        thousands, on long docs), the same for every label of a token, which
        the division takes out; padded rows stay 0."""
        probs = marginals(self.tempered)
        probs = probs / probs.sum(-1, keepdim=True).clamp_min(torch.finfo(probs.dtype).tiny)
        if not bool(torch.isfinite(probs).all()):  # checked after the temperature's scaling
            raise NonFiniteScoresError(Errors.E034.format(n_docs=len(self.doc_lengths), n_tokens=sum(self.doc_lengths)))
        return probs

    def uncertainty(self) -> List[Tuple[float, numpy.ndarray]]:
        """Per doc, the log probability of its best (Viterbi) path and the
        entropy (nats) of each token's marginal distribution: what active
        learning ranks docs by. A doc's rows are independent, so its path's
        log probability is the sum of its rows'; an empty doc has 0.0 and no
        entropies. Both at the batch's temperature: the path is decoded from
        the scores, its tempered score is its score / tau."""
        if self.scores.emissions.shape[1] == 0:
            return [(0.0, numpy.zeros((0,))) for _ in self.doc_lengths]
        _, best = viterbi_decode(self.scores)
        with torch.no_grad():  # one forward-backward gives log Z and the marginals
            alphas, betas, log_z = forward_backward(self.tempered)
        mask = self.scores.mask.unsqueeze(2)
        log_probs = (alphas + betas - log_z[:, None, None]).masked_fill(~mask, 0.0).double()
        entropy = -(log_probs.exp() * log_probs).sum(-1)  # shape: (rows, T)
        row_log_probs = (best.double() / self.temperature - log_z.double()).clamp_max(0.0)
        host = torch.cat([entropy, row_log_probs[:, None]], dim=1).cpu().numpy()  # one device-to-host copy
        per_doc_entropy = self.split(host[:, :-1])
        host_row_log_probs = host[:, -1]
        results, start = [], 0
        for n_rows, doc_entropy in zip(self.rows_per_doc, per_doc_entropy):
            results.append((float(host_row_log_probs[start : start + n_rows].sum()), doc_entropy))
            start += n_rows
        return results

    def negative_log_likelihood(self, gold: Sequence[numpy.ndarray], excluded: Sequence[numpy.ndarray]) -> float:
        """The summed partial-label NLL of the gold labels at the batch's
        temperature, as the training loss sums it (no gradient).

        gold (Sequence[ndarray]): per doc, an int64 label id per token; -1
            where unknown (every label allowed).
        excluded (Sequence[ndarray]): per doc, an int64 label id per token
            that the token must not take, or -1.
        RETURNS (float): the NLL, in nats; 0.0 for docs without a token.
        """
        if self.scores.emissions.shape[1] == 0:
            return 0.0
        with torch.no_grad():
            return float(crf_loss(self.tempered, self.to_grid(gold), self.to_grid(excluded)))

    def nbest(self, k: int) -> List[List[Ranked]]:
        """Per doc, its k most probable label paths with their log probabilities
        (at the batch's temperature: the paths and their order are the
        scores', a path's tempered score is its score / tau)."""
        paths, values = nbest_decode(
            self.scores, paths_at_most(k, self.scores.emissions.shape[2], self.scores.emissions.shape[1])
        )
        with torch.no_grad():
            log_z = log_partition(self.tempered)
        # one copy for the paths, one for the scores and log Z
        host_paths = paths.cpu().numpy()
        host = torch.cat([values, log_z[:, None].to(values.dtype)], dim=1).cpu().numpy()
        host_values, host_log_z = host[:, :-1], host[:, -1:]
        valid, log_probs = host_values > NEG_INF / 2, host_values / self.temperature - host_log_z
        return ranked_per_doc(host_paths, valid, log_probs, self.row_lengths, self.rows_per_doc, k)

    def spans_in_rows(
        self, spans: Sequence[Sequence[Tuple[int, int, int]]]
    ) -> Tuple[List[Tuple[int, int, int, int]], List[Tuple[int, int]], numpy.ndarray]:
        """Doc spans in the rows (chunks) of the batch: `rows.spans_in_rows`."""
        return spans_in_rows(self.row_lengths, self.rows_per_doc, spans)

    def span_probabilities(
        self,
        patterns: Sequence[Sequence[int]],
        spans: Optional[Sequence[Sequence[Span]]] = None,
        *,
        threshold: Optional[float] = None,
        max_length: Optional[int] = None,
    ) -> List[SpanProbabilities]:
        """Per doc, the exact posterior probability of entity spans: that
        tokens start..end-1 form exactly one entity of a type (see
        `spacy_crf.nn.spans` and `spacy_crf.targets.span_patterns`).

        Every row (chunk) is its own CRF sequence, and the scheme's
        constraints end every entity inside its row, so decoding never
        outputs a span that crosses a chunk's edge: such a span has
        probability 0 here, and `found` never holds one.

        patterns (Sequence[Sequence[int]]): per entity type, its (single,
            first, middle, last, not_after) label ids, as `span_patterns`
            gives them.
        spans (Optional[Sequence[Sequence[Span]]]): per doc, the spans
            (start, end exclusive, type index) to score; None for none.
        threshold (Optional[float]): in (0, 1]: also find, per doc, every
            span with a probability at least this; None finds none.
        max_length (Optional[int]): the longest span to find; None: no limit
            (the search stops, exactly, where no longer span can reach the
            threshold).

        The results come to the host in one copy; the threshold search also
        syncs once per span length it tries (whether to go on), and the
        asked spans go to the device in one copy.

        RETURNS (List[SpanProbabilities]): per doc, `given` (the asked spans'
            probabilities, in order) and `found`.
        """
        pattern_array = numpy.asarray(patterns, dtype="int64").reshape(-1, 5)
        n_types = len(pattern_array)
        given: Sequence[Sequence[Span]] = [[] for _ in self.doc_lengths] if spans is None else spans
        check_spans(given, self.doc_lengths, n_types)
        if threshold is not None and not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        inside, places, row_offset = self.spans_in_rows(given)
        row_doc = numpy.repeat(numpy.arange(len(self.doc_lengths)), self.rows_per_doc)
        device = self.scores.emissions.device
        pattern_tensor = torch.from_numpy(pattern_array).to(device)
        parts = []
        n_found = 0
        min_log_prob = None if threshold is None else math.log(threshold)
        search = min_log_prob is not None and n_types > 0 and self.scores.emissions.shape[1] > 0
        tempered = self.tempered
        with torch.no_grad():
            passes = forward_backward(tempered) if inside or search else None
            if inside:
                longest = max(end - start + 1 for _, start, end, _ in inside)
                spans_tensor = torch.tensor(inside, dtype=torch.long, device=device)
                log_probs = span_log_probs(tempered, spans_tensor, pattern_tensor, max_length=longest, passes=passes)
                parts.append(torch.exp(log_probs).double())
            if search:
                assert min_log_prob is not None  # search is only with a threshold
                all_log_probs = all_span_log_probs(
                    tempered, pattern_tensor, max_length, min_log_prob=min_log_prob, passes=passes
                )  # shape: (rows, T, L, n_types)
                where = (all_log_probs >= min_log_prob).nonzero()  # shape: (M, 4)
                n_found = where.shape[0]
                values = torch.exp(all_log_probs[tuple(where.t())]).double()
                parts.extend([where.double().flatten(), values])
            host = torch.cat(parts).cpu().numpy() if parts else numpy.zeros((0,))  # one copy
        results = [SpanProbabilities(numpy.zeros((len(doc_spans),))) for doc_spans in given]
        for (doc, j), prob in zip(places, host[: len(inside)]):
            results[doc].given[j] = prob
        found = host[len(inside) :]
        hits = found[: 4 * n_found].reshape(n_found, 4).astype("int64")  # row, start, size - 1, type
        for (row, start, size, kind), prob in zip(hits.tolist(), found[4 * n_found :].tolist()):
            begin = int(row_offset[row]) + start
            results[row_doc[row]].found.append((begin, begin + size + 1, kind, prob))
        return results
