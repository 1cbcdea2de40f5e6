"""Prediction over docs of any length: the model's scores, window by window.

Two limits, with different jobs:
- the window (the component's `window` setting) bounds memory: a doc longer
  than this is scored window by window, each window a doc of its own that goes
  through the whole model (tok2vec, BiLSTM, CRF) alone, so no activation ever
  holds more than one window's tokens;
- the chunk (the model's `chunk_size`, in `bilstm_crf.py`) bounds the time
  loop: within one call, the tok2vec output of a doc longer than this is cut
  into near-equal chunks, each read by the BiLSTM and decoded by the CRF as a
  row of one padded batch (a short loop, a wide batch); `CRFBatch` maps the
  rows back to docs. Neither the BiLSTM nor the CRF sees across a chunk's or a
  window's edge.

With `by_sentence`, a doc is read sentence by sentence: each sentence is a
row of its own (cut by the chunk where longer), as the configs train on
sentences; the tok2vec still reads the whole doc. The sentences are the doc's
own (from a senter, sentencizer or parser before the component), or, in a doc
without sentence boundaries, those spaCy's sentencizer would find (after
sentence-final punctuation), for reading only.

`DocScores` is what prediction asks for: the docs' scores, with the
methods of `CRFBatch` (decode, decode_with_confidence, marginals, nbest,
span_probabilities) answered per doc. The short docs are scored together in one model call; each
window of a long doc in a call of its own, decoded and dropped before the
next, and the windows' results are joined per doc (windows are independent
CRF sequences, like chunks).

Scores that hold NaN or inf (weights or input vectors gone non-finite) raise
E034 before anything is decoded from them.

The temperature of the probabilities is applied here, once: every batch that
`_score` hands out carries it (see `CRFBatch.tempered`), so every method
below gives probabilities at that temperature and decodes the same paths.
"""

import functools
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, TypeVar, cast

import numpy
from spacy.attrs import IS_PUNCT, ORTH
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc
from thinc.api import Model

from ..engine.batch import ArrayCRFBatch
from ..errors import Errors, NonFiniteScoresError
from ..typed_api import hash_string
from .bilstm_crf import ModelOutput as AnyBatch
from .bilstm_crf import crf_shim, predict_by_pieces, uses_array_engine
from .crf_batch import (
    CRFBatch,
    Ranked,
    Span,
    SpanProbabilities,
    check_spans,
    merge_nbest,
)

T = TypeVar("T")


class DocScores:
    """The CRF scores of a batch of docs, for prediction.

    model (Model[List[Doc], CRFBatch]): a built spacy_crf.BiLSTMCRF model.
    docs (Sequence[Doc]): the docs.
    window (int): docs longer than this are scored window by window; 0 never
        splits.
    temperature (float): tau > 0: the probabilities are those of
        P_tau(y | x), proportional to exp(Score(x, y) / tau); decoding is not
        changed by it. 1.0 is the model's own.
    by_sentence (bool): read each sentence of a doc as its own CRF sequence
        (`sentence_lengths`; a span across a sentence boundary, like one
        across a chunk's edge, is never decoded and has probability 0).
    """

    def __init__(
        self, model: Model, docs: Sequence[Doc], window: int = 0, temperature: float = 1.0, by_sentence: bool = False
    ) -> None:
        self.model = model
        self.docs = list(docs)
        self.window = window
        self.temperature = temperature
        self.by_sentence = by_sentence

    def decode(self) -> List[numpy.ndarray]:
        """Per doc, the Viterbi label ids (int64, one per token)."""
        return [_concatenate(parts) for parts in self._per_doc(lambda batch: batch.decode())]

    def decode_with_confidence(self) -> Tuple[List[numpy.ndarray], List[numpy.ndarray]]:
        """Per doc, the Viterbi label ids and each one's marginal probability."""
        pairs = self._per_doc(lambda batch: list(zip(*batch.decode_with_confidence())))
        ids = [_concatenate([i for i, _ in parts]) for parts in pairs]
        confidences = [_concatenate([c for _, c in parts]) for parts in pairs]
        return ids, confidences

    def marginals(self) -> List[numpy.ndarray]:
        """Per doc, the (n_tokens, K) marginal probability of every label."""
        return [_concatenate(parts) for parts in self._per_doc(lambda batch: batch.marginals())]

    def uncertainty(self) -> List[Tuple[float, numpy.ndarray]]:
        """Per doc, the log probability of its best path (windows are
        independent: their log probabilities add up) and each token's
        marginal entropy, as `CRFBatch.uncertainty`."""
        parts = self._per_doc(lambda batch: batch.uncertainty())
        return [(sum(lp for lp, _ in doc_parts), _concatenate([e for _, e in doc_parts])) for doc_parts in parts]

    def nbest(self, k: int) -> List[List[Ranked]]:
        """Per doc, its k most probable label paths and their log probabilities."""
        return [merge_nbest(parts, k) for parts in self._per_doc(lambda batch: batch.nbest(k))]

    def span_probabilities(
        self,
        patterns: Sequence[Sequence[int]],
        spans: Optional[Sequence[Sequence[Span]]] = None,
        *,
        threshold: Optional[float] = None,
        max_length: Optional[int] = None,
    ) -> List[SpanProbabilities]:
        """Per doc, the exact posterior probabilities of entity spans, as
        `CRFBatch.span_probabilities` (same arguments) with the windows
        joined: a span that crosses a window's edge, like one that crosses
        a chunk's, is never decoded and has probability 0.

        RETURNS (List[SpanProbabilities]): per doc, the probabilities of its
            asked spans (`given`) and the spans at or above the threshold
            (`found`), in doc token offsets.
        """
        given: Sequence[Sequence[Span]] = [[] for _ in self.docs] if spans is None else spans
        n_types = len(numpy.asarray(patterns, dtype="int64").reshape(-1, 5))
        check_spans(given, [len(doc) for doc in self.docs], n_types)
        results = [SpanProbabilities(numpy.zeros((len(doc_spans),))) for doc_spans in given]
        for doc_ids, offset, batch in self.parts():
            # the asked spans inside this part, in its docs' offsets
            picked = []
            for i, n in zip(doc_ids, batch.doc_lengths):
                picked.append(
                    [j for j, (start, end, _) in enumerate(given[i]) if offset <= start and end <= offset + n]
                )
            part_spans = [
                [(given[i][j][0] - offset, given[i][j][1] - offset, given[i][j][2]) for j in js]
                for i, js in zip(doc_ids, picked)
            ]
            part = batch.span_probabilities(patterns, part_spans, threshold=threshold, max_length=max_length)
            for i, js, result in zip(doc_ids, picked, part):
                results[i].given[js] = result.given
                results[i].found.extend(
                    (start + offset, end + offset, kind, prob) for start, end, kind, prob in result.found
                )
        return results

    def decode_with_spans(
        self,
        patterns: Sequence[Sequence[int]],
        path_spans: Callable[[numpy.ndarray], List[Span]],
        *,
        confidence: bool = False,
        threshold: Optional[float] = None,
    ) -> Tuple[List[numpy.ndarray], Optional[List[numpy.ndarray]], List[List[Span]], List[SpanProbabilities]]:
        """Viterbi decoding and entity span posteriors in one model pass: per
        doc, the label ids, with `confidence` their marginal probabilities,
        the entity spans of the Viterbi path, and their probabilities
        (`given`, in the order of the spans) with every span at or above
        `threshold` (`found`).

        patterns (Sequence[Sequence[int]]): per entity type, its span labels
            (see `spacy_crf.targets.span_patterns`).
        path_spans (Callable[[ndarray], List[Span]]): the entity spans
            (start, end, type) of a path of label ids.
        RETURNS: per doc, the ids, the confidences (None without
            `confidence`), the Viterbi spans and their SpanProbabilities.
        """
        ids: List[List[numpy.ndarray]] = [[] for _ in self.docs]
        confidences: List[List[numpy.ndarray]] = [[] for _ in self.docs]
        spans: List[List[Span]] = [[] for _ in self.docs]
        probs = [SpanProbabilities() for _ in self.docs]
        given: List[List[numpy.ndarray]] = [[] for _ in self.docs]
        for doc_ids, offset, batch in self.parts():
            if confidence:
                part_ids, part_confidences = batch.decode_with_confidence()
            else:
                # placeholders, never read: joined_confidences is None without confidence
                part_ids, part_confidences = batch.decode(), cast(List[numpy.ndarray], [None] * len(doc_ids))
            part_spans = [path_spans(path) for path in part_ids]
            part_probs = batch.span_probabilities(patterns, part_spans, threshold=threshold)
            for i, path, conf, found_spans, result in zip(doc_ids, part_ids, part_confidences, part_spans, part_probs):
                ids[i].append(path)
                confidences[i].append(conf)
                spans[i].extend((start + offset, end + offset, kind) for start, end, kind in found_spans)
                given[i].append(result.given)
                probs[i].found.extend((start + offset, end + offset, kind, p) for start, end, kind, p in result.found)
        for i, parts in enumerate(given):
            probs[i].given = _concatenate(parts)
        joined_confidences = [_concatenate(parts) for parts in confidences] if confidence else None
        return [_concatenate(parts) for parts in ids], joined_confidences, spans, probs

    def _per_doc(self, method: Callable[[AnyBatch], List[T]]) -> List[List[T]]:
        """`method` on every scored part; per doc, its parts' results in order."""
        results: List[List[T]] = [[] for _ in self.docs]
        for doc_ids, _, batch in self.parts():
            for i, result in zip(doc_ids, method(batch)):
                results[i].append(result)
        return results

    def parts(self) -> Iterator[Tuple[List[int], int, AnyBatch]]:
        """(which docs, the part's first token in its doc, their batch at this
        object's temperature): the short docs together (offset 0), then each
        window of each long doc alone, one model call each, one at a time."""
        window = self.window
        short = [i for i, doc in enumerate(self.docs) if not window or len(doc) <= window]
        if short:
            yield short, 0, self._score([self.docs[i] for i in short])
        for i, doc in enumerate(self.docs):
            if window and len(doc) > window:
                for start in range(0, len(doc), window):
                    yield [i], start, self._score([doc[start : start + window].as_doc()])

    def _score(self, docs: List[Doc]) -> AnyBatch:
        """The batch of the docs, at this object's temperature."""
        if not any(len(doc) for doc in docs):
            n_labels = self.model.get_ref("output_layer").get_dim("nO")
            if uses_array_engine(self.model):
                batch: AnyBatch = ArrayCRFBatch.empty(len(docs), n_labels)
            else:
                batch = CRFBatch.empty(len(docs), n_labels, crf_shim(self.model).device)
        else:
            pieces = sentence_lengths_of(docs) if self.by_sentence else []
            if any(len(doc_pieces) > 1 for doc_pieces in pieces):
                batch = predict_by_pieces(self.model, docs, pieces)
            else:
                batch = cast(AnyBatch, self.model.predict(docs))
            if not batch.is_finite():
                raise NonFiniteScoresError(Errors.E034.format(n_docs=len(docs), n_tokens=sum(len(d) for d in docs)))
        return batch.with_temperature(self.temperature)


def sentence_lengths(doc: Doc) -> List[int]:
    """The lengths of the doc's sentences: from its tokens' sentence starts
    (as `Doc.sents` reads them without a user hook: a token that starts a
    sentence, and the first token), or, where the doc has none, from where
    spaCy's sentencizer would start one (after sentence-final punctuation).
    The doc itself is not changed."""
    return sentence_lengths_of([doc])[0]


def sentence_lengths_of(docs: Sequence[Doc]) -> List[List[int]]:
    """`sentence_lengths` of each doc; the docs without sentence starts in
    one pass of array operations (a batch of single sentences costs little)."""
    lengths: List[List[int]] = [[len(doc)] for doc in docs]
    plain = []
    for i, doc in enumerate(docs):
        if not len(doc):
            continue
        if doc.has_annotation("SENT_START"):
            starts = numpy.flatnonzero(doc.to_array("SENT_START") == 1)
            lengths[i] = numpy.diff(sorted({0, len(doc), *starts.tolist()})).tolist()
        else:
            plain.append(i)
    if plain:
        columns = [docs[i].to_array([ORTH, IS_PUNCT]) for i in plain]
        punct_starts = _punctuation_starts(numpy.concatenate(columns), [len(c) for c in columns])
        for i, doc_starts in zip(plain, punct_starts):
            if len(doc_starts) > 1:  # else one sentence: [len(doc)] already
                lengths[i] = numpy.diff(numpy.append(doc_starts, len(docs[i]))).tolist()
    return lengths


def punctuation_sentence_starts(doc: Doc) -> numpy.ndarray:
    """Where spaCy's sentencizer (its default punct_chars) would start
    sentences, without setting them: at the first token after a
    sentence-final character ("." "!" "?" ...) that is neither punctuation nor
    such a character, and at the first token. The same rule as
    `Sentencizer.predict`, on arrays instead of Token objects.

    RETURNS (numpy.ndarray): the start indices, ascending (int64).
    """
    if not len(doc):
        return numpy.zeros((0,), dtype="int64")
    return _punctuation_starts(doc.to_array([ORTH, IS_PUNCT]), [len(doc)])[0]


def _punctuation_starts(columns: numpy.ndarray, doc_lengths: List[int]) -> List[numpy.ndarray]:
    """The sentencizer's starts in each of several non-empty docs, from their
    (ORTH, IS_PUNCT) columns one doc after another."""
    keys = _sentence_final_keys()  # sorted
    final = keys[numpy.searchsorted(keys, columns[:, 0]) % len(keys)] == columns[:, 0]
    word = ~(final | columns[:, 1].astype(bool))
    seen = numpy.cumsum(final)  # sentence-final characters up to each token
    offsets = numpy.cumsum(doc_lengths) - doc_lengths
    doc_of = numpy.repeat(numpy.arange(len(doc_lengths)), doc_lengths)
    words = numpy.flatnonzero(word)
    # a word starts a sentence if a sentence-final character came after the
    # word before it in its doc (or, for a doc's first word, anywhere before
    # it in the doc: never for a word at the doc's first token)
    first = numpy.ones(len(words), dtype=bool)
    first[1:] = doc_of[words[1:]] != doc_of[words[:-1]]
    before_doc = seen[offsets] - final[offsets]  # seen before each doc's first token
    before = numpy.zeros(len(words), dtype=seen.dtype)
    before[1:] = seen[words[:-1]]
    before = numpy.where(first, before_doc[doc_of[words]], before)
    starts = words[seen[words] > before]
    # each doc's starts, its first token first, in doc offsets
    starts = numpy.sort(numpy.concatenate([offsets, starts])).astype("int64")
    per_doc = numpy.split(starts, numpy.searchsorted(starts, offsets[1:]))
    return [doc_starts - offset for doc_starts, offset in zip(per_doc, offsets)]


@functools.lru_cache(maxsize=1)
def _sentence_final_keys() -> numpy.ndarray:
    return numpy.unique(numpy.asarray([hash_string(char) for char in Sentencizer.default_punct_chars], dtype="uint64"))


def _concatenate(parts: List[numpy.ndarray]) -> numpy.ndarray:
    return parts[0] if len(parts) == 1 else numpy.concatenate(parts)
