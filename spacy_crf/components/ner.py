"""The `crf_ner` component: CRF-decoded doc.ents through the tags of a scheme,
with exact entity probabilities, a probability threshold and candidate spans."""

import warnings
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span, SpanGroup
from spacy.vocab import Vocab
from thinc.api import Model

from ..errors import Errors, Warnings
from ..ml import CRFBatch, DocScores
from ..scoring import ner_score
from ..targets import ENTITY_SCHEMES, EntityTarget
from .base import CRFComponent, CRFPrediction
from .defaults import default_model
from .settings import (
    BATCH_WORDS,
    BY_SENTENCE,
    CANDIDATES_KEY,
    CANDIDATES_THRESHOLD,
    ENTITY_RECOGNIZER_OVERWRITE,
    ENTITY_RECOGNIZER_SETTINGS,
    INCORRECT_SPANS_KEY,
    LEARN_NEW_LABELS,
    QUANTIZE,
    SCHEME,
    STORE_CONFIDENCE,
    STORE_ENTITY_PROBS,
    THREADS,
    THRESHOLD,
    WINDOW,
    defaults,
    documented,
)
from .training import RejectedSpans

if not Span.has_extension("crf_prob"):
    Span.set_extension("crf_prob", default=None)

DEFAULT_NER_MODEL = default_model(transitions="full", emissions="full", nC=8, word_dropout=0.05)


@Language.factory(
    "crf_ner",
    assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
    default_config={
        "model": DEFAULT_NER_MODEL,
        **defaults(ENTITY_RECOGNIZER_SETTINGS),
        "scorer": {"@scorers": "spacy_crf.ner_scorer.v1"},
    },
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None},
)
@documented(ENTITY_RECOGNIZER_SETTINGS)
def make_crf_ner(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    scheme: str,
    incorrect_spans_key: Optional[str],
    store_entity_probs: bool,
    threshold: float,
    candidates_key: Optional[str],
    candidates_threshold: float,
    overwrite: bool,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    learn_new_labels: bool,
    scorer: Optional[Callable],
) -> "CRFEntityRecognizer":
    """Create a CRFEntityRecognizer: a BiLSTM-CRF that writes doc.ents.

    model: the network, e.g. `spacy_crf.BiLSTMCRF.v4`: docs in, CRF scores out.
    scorer: `spacy_crf.ner_scorer.v1`: ents_p, ents_r, ents_f and ents_per_type
        (and ents_prob_ece/_brier with store_entity_probs).
    """
    return CRFEntityRecognizer(
        nlp.vocab,
        model,
        name,
        scheme=scheme,
        incorrect_spans_key=incorrect_spans_key,
        store_entity_probs=store_entity_probs,
        threshold=threshold,
        candidates_key=candidates_key,
        candidates_threshold=candidates_threshold,
        overwrite=overwrite,
        window=window,
        by_sentence=by_sentence,
        batch_words=batch_words,
        store_confidence=store_confidence,
        threads=threads,
        quantize=quantize,
        learn_new_labels=learn_new_labels,
        scorer=scorer,
    )


class CRFEntityRecognizer(CRFComponent):
    """A named entity recognizer whose output layer is a linear-chain CRF over
    the tags of a scheme: valid spans only, exact span probabilities."""

    TARGETS = {"ents": EntityTarget("BILUO")}
    FACTORY = "crf_ner"
    LABEL_KIND = "entity type"
    SETTINGS = ENTITY_RECOGNIZER_SETTINGS

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_ner",
        *,
        scheme: str = SCHEME.default,
        incorrect_spans_key: Optional[str] = INCORRECT_SPANS_KEY.default,
        store_entity_probs: bool = STORE_ENTITY_PROBS.default,
        threshold: float = THRESHOLD.default,
        candidates_key: Optional[str] = CANDIDATES_KEY.default,
        candidates_threshold: float = CANDIDATES_THRESHOLD.default,
        overwrite: bool = ENTITY_RECOGNIZER_OVERWRITE.default,
        window: int = WINDOW.default,
        by_sentence: bool = BY_SENTENCE.default,
        batch_words: int = BATCH_WORDS.default,
        store_confidence: bool = STORE_CONFIDENCE.default,
        threads: int = THREADS.default,
        quantize: str = QUANTIZE.default,
        learn_new_labels: bool = LEARN_NEW_LABELS.default,
        scorer: Optional[Callable] = ner_score,
    ) -> None:
        """Initialize a CRFEntityRecognizer; each setting is described in
        settings.py (`ENTITY_RECOGNIZER_SETTINGS`) and checked (E039).
        scorer: None for none."""
        super().__init__(
            vocab,
            model,
            name,
            scorer=scorer,
            cfg={
                "scheme": scheme,
                "incorrect_spans_key": incorrect_spans_key,
                "store_entity_probs": store_entity_probs,
                "threshold": threshold,
                "candidates_key": candidates_key,
                "candidates_threshold": candidates_threshold,
                "overwrite": overwrite,
                "window": window,
                "by_sentence": by_sentence,
                "batch_words": batch_words,
                "store_confidence": store_confidence,
            },
            threads=threads,
            quantize=quantize,
            learn_new_labels=learn_new_labels,
        )

    # the target of each scheme: the cfg's "scheme" chooses
    SCHEME_TARGETS = {scheme: EntityTarget(scheme) for scheme in ENTITY_SCHEMES}

    @property
    def target(self) -> EntityTarget:
        return self.SCHEME_TARGETS[self.cfg["scheme"]]

    @property
    def labels(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the entity types, sorted, as spaCy's ner
        lists them; `tags` has the CRF's labels (the scheme's tags)."""
        return tuple(sorted({tag.partition("-")[2] for tag in self.tags if tag != "O"}))

    def add_label(self, label: str) -> int:
        """Add an entity type before the model is initialized (its tags of
        the scheme, and "O"); any name spaCy's ner takes, but a tag of the
        scheme ("B-PER": E038).

        label (str): the entity type, e.g. "PER".
        RETURNS (int): 0 if the type was already present, otherwise 1.
        """
        if isinstance(label, str) and self.target.is_tag(label):
            raise ValueError(
                Errors.E038.format(
                    name=self.name,
                    label=label,
                    scheme=self.cfg["scheme"],
                    entity_type=label.partition("-")[2] or label,
                )
            )
        return super().add_label(label)

    def _label_of_tag(self, tag: str) -> str:
        """The entity type of a tag of the scheme ("B-ORG": "ORG")."""
        return tag.partition("-")[2] or tag

    def _initialize_without_labels(self) -> None:
        """No entity type: the CRF has the one tag "O" and writes no entity,
        as spaCy's ner initialized without labels (W004)."""
        warnings.warn(Warnings.W004.format(name=self.name), stacklevel=2)
        self._add("O")

    def _constraint_scheme(self) -> str:
        return self.cfg["scheme"]

    @property
    def _asks_spans(self) -> bool:
        """Whether prediction computes entity span posteriors."""
        cfg = self.cfg
        return bool(cfg["store_entity_probs"] or cfg["threshold"] or cfg["candidates_key"] is not None)

    def _decode(self, scores: DocScores) -> CRFPrediction:
        """Viterbi ids with the decoded entities' posteriors and the
        candidate spans where asked, from one model pass; entities below
        the threshold become "O"."""
        if not self.cfg["trained"]:  # initialized, never updated: no entities, as spaCy's ner
            outside = self.tags.index("O")
            ids = [numpy.full(len(doc), outside, dtype="int64") for doc in scores.docs]
            no_entities: Optional[List[List[Tuple[int, int, str]]]] = [[] for _ in ids] if self._asks_spans else None
            no_probs = [numpy.zeros(0, dtype="float32") for _ in ids] if self._asks_spans else None
            found: Optional[List[List[Tuple[int, int, str, float]]]] = (
                [[] for _ in ids] if self.cfg["candidates_key"] is not None else None
            )
            return CRFPrediction(ids, None, no_entities, no_probs, found)
        if not self._asks_spans:
            return super()._decode(scores)
        labels, target = self.tags, self.target
        types, patterns = target.span_patterns(labels)
        type_ids = {kind: i for i, kind in enumerate(types)}

        def path_spans(path: numpy.ndarray) -> List[Tuple[int, int, int]]:
            offsets = target.offsets([labels[i] for i in path.tolist()])
            return [(start, end, type_ids[kind]) for start, end, kind in offsets]

        key = self.cfg["candidates_key"]
        ids, confidences, spans, probs = scores.decode_with_spans(
            patterns,
            path_spans,
            confidence=self.cfg["store_confidence"],
            threshold=self.cfg["candidates_threshold"] if key is not None else None,
        )
        least = self.cfg["threshold"]
        outside = labels.index("O")
        entities, entity_probs, dropped = [], [], []
        for i, (doc_spans, doc_probs) in enumerate(zip(spans, probs)):
            keep = [p >= least for p in doc_probs.given.tolist()]
            if not all(keep):
                ids[i] = ids[i].copy()
                for (start, end, _), kept in zip(doc_spans, keep):
                    if not kept:
                        ids[i][start:end] = outside
                        dropped.append((i, start, end))
            entities.append([(start, end, types[kind]) for (start, end, kind), kept in zip(doc_spans, keep) if kept])
            entity_probs.append(doc_probs.given[numpy.asarray(keep, dtype=bool)])
        if dropped and confidences is not None:  # the confidence of "O" where an entity was dropped
            marginals = scores.marginals()
            for i, start, end in dropped:
                confidences[i][start:end] = marginals[i][start:end, outside]
        candidates = None
        if key is not None:
            candidates = [[(start, end, types[kind], p) for start, end, kind, p in doc.found] for doc in probs]
        return CRFPrediction(ids, confidences, entities, entity_probs, candidates)

    def set_annotations(self, docs: Iterable[Doc], prediction: Union[CRFPrediction, List[numpy.ndarray]]) -> None:
        """Write the predicted entities (with their probabilities and the
        candidate spans where asked) to the docs.

        docs (Iterable[Doc]): the docs.
        prediction (CRFPrediction): from `predict`; a plain list of label id
            arrays is accepted too.
        """
        docs = [docs] if isinstance(docs, Doc) else list(docs)
        if not isinstance(prediction, CRFPrediction):
            prediction = CRFPrediction(list(prediction))
        super().set_annotations(docs, prediction)
        if prediction.entity_probs is not None and self.cfg["store_entity_probs"]:
            assert prediction.entities is not None  # predict gives entity_probs with the entities
            for doc, entities, probs in zip(docs, prediction.entities, prediction.entity_probs):
                by_span = dict(zip(entities, probs.tolist()))
                for ent in doc.ents:
                    prob = by_span.get((ent.start, ent.end, ent.label_))
                    if prob is not None:
                        ent._.crf_prob = prob
        key = self.cfg["candidates_key"]
        if prediction.candidates is not None and key is not None:
            for doc, candidates in zip(docs, prediction.candidates):
                spans = [Span(doc, start, end, label=label) for start, end, label, _ in candidates]
                doc.spans[key] = SpanGroup(doc, name=key, spans=spans)
                doc.spans[key].attrs["scores"] = numpy.asarray([p for *_, p in candidates], dtype="float32")

    def _rejected_spans(self, examples: Sequence[Any]) -> RejectedSpans:
        """Per example, the reference's rejected spans (doc.spans[incorrect_spans_key])
        aligned to the predicted tokens, as (start, end, type index); and the
        entity patterns. A rejected span that is also a gold entity (a
        contradiction: the gold wins), that does not align, or whose label is
        not an entity type of the component is left out. (None, None) without
        the setting."""
        key = self.cfg["incorrect_spans_key"]
        if key is None:
            return None, None
        types, patterns = self.target.span_patterns(self.tags)
        index = {kind: i for i, kind in enumerate(types)}
        rejected: List[List[Tuple[int, int, int]]] = []
        for eg in examples:
            group = eg.reference.spans.get(key, [])
            if not len(group):
                rejected.append([])
                continue
            spans = eg.get_aligned_spans_y2x(group, allow_overlap=True)
            gold = {(e.start, e.end, e.label_) for e in eg.get_aligned_spans_y2x(eg.reference.ents)}
            rejected.append(
                [
                    (span.start, span.end, index[span.label_])
                    for span in spans
                    if span.label_ in index and (span.start, span.end, span.label_) not in gold
                ]
            )
        return rejected, patterns
