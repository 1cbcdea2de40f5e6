"""The `crf_tagger` pipeline component: CRF-decoded labels in token.tag_,
token.pos_, token.morph or doc.ents. spaCy glue only: the model (spacy_crf.ml)
turns docs into CRF scores and decodes them; the target (spacy_crf.targets)
says what the labels mean."""
import copy
import functools
import math
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

import numpy
import srsly
import torch
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span, SpanGroup, Token
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate

from .batching import word_batches
from .constraints import SCHEMES, allowed_transitions
from .errors import DamagedModelError, Errors, UnsafeModelError
from .files import checksum, write_atomic
from .ml import (
    CRFBatch,
    DocScores,
    count_known_words,
    crf_batch_loss,
    crf_shim,
    first_non_finite_weight,
    set_constraints,
    set_label_classes,
    set_label_parts,
    set_quantize,
    torch_network,
    uses_label_classes,
    uses_label_parts,
)
from .nn import quantize as quantization
from .scorers import crf_tagger_score
from .targets import (
    ENTITY_SCHEMES,
    TARGETS,
    UPOS_TAGS,
    Target,
    entity_offsets,
    gold_ids,
    label_classes,
    label_parts,
    span_patterns,
)
from .threads import torch_threads

# The factory's default: the network of configs/cpu.cfg, the most accurate
# CPU network shipped and faster than spaCy's tagger in nlp.pipe.
default_model_config = """
[model]
@architectures = "spacy_crf.BiLSTMCRF.v1"
hidden_width = 192
depth = 1
dropout = 0.33
crf = true
chunk_size = 512
input_dropout = 0.2

[model.tok2vec]
@architectures = "spacy_crf.HashCharEmbed.v2"
width = 128
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [50000, 2000, 10000, 2000]
nM = 16
nC = 8
include_static_vectors = false
min_count = 2
word_dropout = 0.25
"""
DEFAULT_CRF_TAGGER_MODEL = Config().from_str(default_model_config)["model"]

if not Token.has_extension("crf_confidence"):
    Token.set_extension("crf_confidence", default=None)
if not Span.has_extension("crf_prob"):
    Span.set_extension("crf_prob", default=None)

F = TypeVar("F", bound=Callable[..., Any])

# The factory settings that say how the component runs, not what it learned:
# loading keeps the values the component was built with (the pipeline's config,
# overrides included) over those saved in its cfg.
RUN_SETTINGS = (
    "overwrite",
    "window",
    "by_sentence",
    "batch_words",
    "store_confidence",
    "store_entity_probs",
    "ents_threshold",
    "candidates_key",
    "candidates_threshold",
    "incorrect_spans_key",
    "constraints",
)
# The cfg entry that holds the checksum of the saved cfg and weights.
CHECKSUM = "checksum"


class CRFPrediction(NamedTuple):
    """What `predict` returns for a batch and `set_annotations` writes.

    ids (List[numpy.ndarray]): per doc, the Viterbi label id of each token.
    confidences (Optional[List[numpy.ndarray]]): per doc, each predicted
        label's marginal probability (with store_confidence), else None.
    entities (Optional[List[List[Tuple[int, int, str]]]]): target "ents" with
        span probabilities asked for: per doc, the (start, end, label) of each
        entity of the decoded path that is kept (see ents_threshold).
    entity_probs (Optional[List[numpy.ndarray]]): per doc, each kept
        entity's exact posterior probability, in the order of `entities`.
    candidates (Optional[List[List[Tuple[int, int, str, float]]]]): with
        candidates_key, per doc every span whose posterior is at least
        candidates_threshold, (start, end, label, probability).
    """

    ids: List[numpy.ndarray]
    confidences: Optional[List[numpy.ndarray]] = None
    entities: Optional[List[List[Tuple[int, int, str]]]] = None
    entity_probs: Optional[List[numpy.ndarray]] = None
    candidates: Optional[List[List[Tuple[int, int, str, float]]]] = None


@Language.factory(
    "crf_tagger",
    assigns=["token.tag", "token.pos", "token.morph", "doc.ents", "token.ent_iob", "token.ent_type"],
    default_config={
        "model": DEFAULT_CRF_TAGGER_MODEL,
        "target": "tag",
        "overwrite": False,
        "window": 8192,
        "by_sentence": False,
        "batch_words": 32768,
        "store_confidence": False,
        "store_entity_probs": False,
        "ents_threshold": 0.0,
        "candidates_key": None,
        "candidates_threshold": 0.5,
        "incorrect_spans_key": None,
        "constraints": "auto",
        "threads": 0,
        "quantize": "none",
        "scorer": {"@scorers": "spacy_crf.crf_tagger_scorer.v1"},
    },
    default_score_weights={
        "tag_acc": 0.5,
        "pos_acc": 0.5,
        "morph_acc": 0.5,
        "morph_per_feat": None,
        "pos_morph_acc": 0.0,
        "tag_pos_morph_acc": 0.0,
        "ents_f": 0.5,
        "ents_p": 0.0,
        "ents_r": 0.0,
        "ents_per_type": None,
    },
)
def make_crf_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    target: str,
    overwrite: bool,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    store_entity_probs: bool,
    ents_threshold: float,
    candidates_key: Optional[str],
    candidates_threshold: float,
    incorrect_spans_key: Optional[str],
    constraints: str,
    threads: int,
    scorer: Optional[Callable],
    quantize: str = "none",
) -> "CRFTagger":
    """Create a CRFTagger.

    model (Model[List[Doc], CRFBatch]): the network, e.g. spacy_crf.BiLSTMCRF.v1.
    target (str): "tag" writes token.tag_, "pos" writes token.pos_ (UPOS),
        "tag+pos" both, from one CRF over the (tag, pos) pairs of the training
        data ("NNS|NOUN"), "morph" writes token.morph (UD features,
        "Case=Nom|Number=Plur"), "pos+morph" token.pos_ and token.morph from
        one CRF over the bundles of the training data, labelled as spaCy's
        morphologizer labels them ("Case=Nom|Number=Plur|POS=NOUN"),
        "tag+pos+morph" token.tag_ as well, from one CRF over the (tag,
        bundle) pairs ("NNS Number=Plur|POS=NOUN"; UDPipe's AllTags), "ents"
        writes doc.ents through the tags of a scheme (BILUO by default).
    overwrite (bool): replace annotation that a doc already has.
    window (int): docs longer than this many tokens are tagged window by
        window, each window on its own through the whole model, to bound
        memory; 0 never splits. The model's chunk_size is smaller and
        different: within a window, it cuts the BiLSTM-CRF's sequence into
        rows of one batch (a short time loop). See spacy_crf.ml.doc_scores.
    by_sentence (bool): the BiLSTM and the CRF read each sentence of a doc
        on its own, as the configs train on single sentences: the doc's
        sentences (a senter, sentencizer or parser earlier in the pipeline),
        or, in a doc without them, where spaCy's sentencizer would cut it
        (read, not written). The tok2vec still reads the whole doc.
    batch_words (int): `pipe` grows each batch of `batch_size` docs by whole
        docs until it holds at least this many tokens, so that short docs
        (one sentence each) are tagged in batches as large as long docs are:
        the BiLSTM's cost per token falls with the rows it runs side by side.
        0 keeps spaCy's batches of exactly `batch_size` docs. Each row is
        read on its own, so float32 labels change at most by float rounding
        (none changed on EWT); the int8 copy's activation scales are per
        batch, so a few of its labels can.
    store_confidence (bool): write the marginal probability of each token's
        predicted tag to token._.crf_confidence.
    store_entity_probs (bool): target "ents": write each entity's exact
        posterior probability (the sum of the probabilities of every tag path
        that makes exactly that span) to span._.crf_prob of doc.ents.
    ents_threshold (float): target "ents": write only the decoded entities
        whose posterior is at least this (0: all of them).
    candidates_key (Optional[str]): target "ents": store every span whose
        posterior is at least candidates_threshold, decoded or not, as a
        SpanGroup in doc.spans[candidates_key] with attrs["scores"].
    candidates_threshold (float): the least posterior of a candidate.
    incorrect_spans_key (Optional[str]): target "ents": in training, the
        spans in the reference doc's doc.spans[incorrect_spans_key] are known
        not to be entities of their label (an annotator's rejections, as for
        spaCy's ner): the paths that contain one are left out of the gold sum.
    constraints (str): "none", or a tag scheme ("BIO"/"IOB2", "BILUO",
        "IOBES") whose invalid transitions get probability exactly 0; "auto"
        is "BILUO" for target "ents" and "none" otherwise.
    threads (int): CPU threads of the component's torch work; 0 (auto) is
        one thread unless the process chose a count itself (OMP_NUM_THREADS,
        MKL_NUM_THREADS or torch.set_num_threads), which is then kept. The
        count is set for the component's own calls and restored after them
        (see spacy_crf.threads).
    quantize (str): "none"; "int8": predict on the CPU with a copy of the
        network whose LSTM and linear layers are dynamically quantized to int8
        (torch's quantize_dynamic); or "bf16": with a copy whose LSTM and
        emission layer run in bfloat16 (fast on CPUs with bfloat16 matrix instructions, AVX512-BF16
        or AMX; elsewhere it can be slower than float32). Both are faster
        where they fit, with slightly different outputs (docs/performance.md
        measures both). Training, saving and the GPU use the float32 network.
    scorer (Optional[Callable]): scores tag_acc, pos_acc, morph_acc (with
        morph_per_feat; pos_morph_acc for "pos+morph", and tag_pos_morph_acc
        for "tag+pos+morph") or ents_p/r/f, to
        match target.
    """
    return CRFTagger(
        nlp.vocab,
        model,
        name,
        target=target,
        overwrite=overwrite,
        window=window,
        by_sentence=by_sentence,
        batch_words=batch_words,
        store_confidence=store_confidence,
        store_entity_probs=store_entity_probs,
        ents_threshold=ents_threshold,
        candidates_key=candidates_key,
        candidates_threshold=candidates_threshold,
        incorrect_spans_key=incorrect_spans_key,
        constraints=constraints,
        threads=threads,
        scorer=scorer,
        quantize=quantize,
    )


def _checked_temperature(value: Any, name: str) -> float:
    """The temperature as a float, or ValueError E024 unless it is a finite
    real number > 0 (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, numpy.integer, numpy.floating)):
        raise ValueError(Errors.E024.format(name=name, value=value))
    if not (math.isfinite(value) and value > 0):
        raise ValueError(Errors.E024.format(name=name, value=value))
    return float(value)


def _checked_batch_words(value: Any, name: str) -> int:
    """batch_words, or ValueError E032 unless it is a whole number >= 0 (a bool is not one)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(Errors.E032.format(name=name, value=value))
    return value


def _in_torch_threads(method: F) -> F:
    """Run a CRFTagger method with the torch thread count of its `threads`
    setting, restoring the process's count afterwards."""

    @functools.wraps(method)
    def wrapped(self: "CRFTagger", *args: Any, **kwargs: Any) -> Any:
        with torch_threads(self.threads):
            return method(self, *args, **kwargs)

    return wrapped  # type: ignore[return-value]


class CRFTagger(TrainablePipe):
    """A sequence tagger whose output layer is a linear-chain CRF.

    Training minimises the CRF negative log-likelihood (tokens without a gold
    label are summed over); prediction is batched Viterbi decoding.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_tagger",
        *,
        target: str = "tag",
        overwrite: bool = False,
        window: int = 8192,
        by_sentence: bool = False,
        batch_words: int = 32768,
        store_confidence: bool = False,
        store_entity_probs: bool = False,
        ents_threshold: float = 0.0,
        candidates_key: Optional[str] = None,
        candidates_threshold: float = 0.5,
        incorrect_spans_key: Optional[str] = None,
        constraints: str = "auto",
        threads: int = 0,
        scorer: Optional[Callable] = crf_tagger_score,
        quantize: str = "none",
    ) -> None:
        """Initialize a CRF tagger (see `make_crf_tagger` for the settings)."""
        if target not in TARGETS:
            raise ValueError(Errors.E001.format(target=target, name=name, options=list(TARGETS)))
        if constraints not in SCHEMES + ("auto",):
            raise ValueError(Errors.E014.format(scheme=constraints, options=list(SCHEMES) + ["auto"]))
        if target == "ents" and constraints not in ENTITY_SCHEMES + ("auto",):
            raise ValueError(Errors.E015.format(name=name, scheme=constraints, options=list(ENTITY_SCHEMES)))
        if not isinstance(by_sentence, bool):
            raise ValueError(Errors.E031.format(name=name, value=by_sentence))
        _checked_batch_words(batch_words, name)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
            raise ValueError(Errors.E018.format(name=name, threads=threads))
        asks_spans = (
            store_entity_probs or ents_threshold > 0 or candidates_key is not None or incorrect_spans_key is not None
        )
        if asks_spans and target != "ents":
            raise ValueError(Errors.E020.format(name=name, target=target))
        if not 0.0 <= ents_threshold <= 1.0:
            raise ValueError(Errors.E021.format(name=name, setting="ents_threshold", value=ents_threshold, low="0 <="))
        if not 0.0 < candidates_threshold <= 1.0:
            raise ValueError(Errors.E021.format(
                name=name, setting="candidates_threshold", value=candidates_threshold, low="0 <"
            ))
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        # the model as nlp.resume_training() found it, for `rehearse`
        self._rehearsal_model: Optional[Model] = None
        # runtime settings (in the pipeline's config.cfg, not in self.cfg)
        self.threads = threads
        self.quantize = quantize
        cfg: Dict[str, Any] = {
            "labels": [],
            "target": target,
            "overwrite": overwrite,
            "window": window,
            "by_sentence": by_sentence,
            "batch_words": batch_words,
            "store_confidence": store_confidence,
            "store_entity_probs": store_entity_probs,
            "ents_threshold": ents_threshold,
            "candidates_key": candidates_key,
            "candidates_threshold": candidates_threshold,
            "incorrect_spans_key": incorrect_spans_key,
            "constraints": constraints,
            # learned after training, like the labels: see `temperature`
            "temperature": 1.0,
        }
        self.cfg = dict(sorted(cfg.items()))

    @property
    def quantize(self) -> str:
        """"none", "int8" or "bf16": CPU prediction through an int8 (bfloat16)
        copy of the network."""
        return crf_shim(self.model).quantize

    @quantize.setter
    def quantize(self, mode: str) -> None:
        if mode not in quantization.MODES:
            raise ValueError(Errors.E026.format(name=self.name, value=mode, options=list(quantization.MODES)))
        if mode == "int8" and not quantization.available():
            raise ValueError(Errors.E027.format(name=self.name, version=torch.__version__))
        set_quantize(self.model, mode)

    @property
    def labels(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, in the order of the CRF's columns."""
        return tuple(self.cfg["labels"])

    @property
    def temperature(self) -> float:
        """The temperature tau of the CRF's probabilities, saved in cfg with
        the component (a pipeline saved without it reads 1.0).

        Every probability the component gives (marginals, store_confidence,
        entity posteriors, candidates, ents_threshold, n-best, uncertainty)
        is that of P_tau(y | x), proportional to exp(Score(x, y) / tau):
        tau > 1 softens them, tau < 1 sharpens them. The decoded labels never
        change. `python -m spacy_crf calibrate` fits it on annotated docs.

        RETURNS (float): tau > 0; 1.0, the model's own probabilities, by default.
        """
        return float(self.cfg.get("temperature", 1.0))

    @temperature.setter
    def temperature(self, value: float) -> None:
        """Set the temperature.

        value (float): a finite number > 0; anything else raises E024.
        """
        self.cfg["temperature"] = _checked_temperature(value, self.name)

    @property
    def label_data(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, for `spacy init labels`."""
        return self.labels

    @property
    def _target(self) -> Target:
        return TARGETS[self.cfg["target"]]

    @property
    def _scheme(self) -> str:
        """The tag scheme in force: constraints, with "auto" resolved."""
        scheme = self.cfg.get("constraints", "none")
        if scheme == "auto":
            return "BILUO" if self.cfg["target"] == "ents" else "none"
        return scheme

    def add_label(self, label: str) -> int:
        """Add a label before the model is initialized.

        label (str): the label; with target "ents", an entity type adds the
            scheme's tags for it.
        RETURNS (int): 0 if the label was already present, otherwise 1.
        """
        if not isinstance(label, str):
            raise ValueError(Errors.E010.format(type=type(label).__name__, label=label))
        tags = self._target.expand_label(label, self._scheme)
        for tag in tags:
            self._check_label(tag)
        if torch_network(self.model) is not None and not set(tags) <= set(self.labels):
            raise ValueError(Errors.E004.format(label=label, name=self.name, n_labels=len(self.labels)))
        return max(self._add(tag) for tag in tags)

    def _check_label(self, label: str) -> None:
        if not self._target.accepts(label):
            raise ValueError(Errors.E002.format(label=label, name=self.name, options=UPOS_TAGS))

    def _add(self, label: str) -> int:
        if label in self.labels:
            return 0
        self._check_label(label)
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    @_in_torch_threads
    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Sequence[str]] = None,
    ) -> None:
        """Set the labels and build the model for a sample of the data.

        get_examples (Callable[[], Iterable[Example]]): the training examples.
        nlp (Optional[Language]): the pipeline; the known-word lists of its
            other components' embeddings are counted over the examples too.
        labels (Optional[Sequence[str]]): the labels, e.g. from `spacy init
            labels`, in this order; by default the labels of the examples and
            those added with `add_label`, sorted.
        """
        validate_get_examples(get_examples, "CRFTagger.initialize")
        util.check_lexeme_norms(self.vocab, "crf_tagger")
        if labels is not None and not len(labels):
            raise ValueError(Errors.E012.format(name=self.name))
        if labels is None:
            labels = sorted(set(self.labels) | self._target.labels_in(get_examples(), self._scheme))
        self.cfg["labels"] = []
        for label in labels:
            for tag in self._target.expand_label(label, self._scheme):
                self._add(tag)
        if not self.labels:
            raise ValueError(
                Errors.E005.format(name=self.name, target=self.cfg["target"], attr=self._target.writes)
            )
        masks = self._constraint_masks()  # E013 early
        models = [self.model] + ([proc.model for _, proc in nlp.pipeline if hasattr(proc, "model")] if nlp else [])
        count_known_words(models, lambda: (example.x for example in get_examples()))
        doc_sample = [example.x for example in islice(get_examples(), 10)]
        classes = label_classes(self._target, self.labels)
        if classes is None and uses_label_classes(self.model):
            raise ValueError(Errors.E023.format(name=self.name, target=self.cfg["target"]))
        set_label_classes(self.model, classes)
        parts = label_parts(self._target, self.labels)
        if (parts is None or not any(parts)) and uses_label_parts(self.model):
            raise ValueError(Errors.E029.format(name=self.name, target=self.cfg["target"]))
        set_label_parts(self.model, parts)
        self.model.get_ref("output_layer").set_dim("nO", len(self.labels), force=True)
        self.model.initialize(X=doc_sample)
        set_constraints(self.model, masks)

    def _constraint_masks(self) -> Optional[Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]]:
        """The scheme's allowed transitions, starts and ends; None for "none"."""
        if self._scheme == "none" or not self.labels:
            return None
        return allowed_transitions(self.labels, self._scheme)

    # Prediction: predict() returns everything set_annotations() writes.

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128, batch_words: Optional[int] = None) -> Iterator[Doc]:
        """Tag a stream of docs, batch by batch, as spaCy's components do,
        except that a batch of `batch_size` docs grows by whole docs until it
        holds at least `batch_words` tokens (see `word_batches`). Where a
        grown batch fails, its docs are tried again `batch_size` at a time,
        so that the error handler is given only the docs of the failing
        part, as without the setting.

        stream (Iterable[Doc]): the docs.
        batch_size (int): the least number of docs in a batch.
        batch_words (Optional[int]): the least number of tokens in a batch;
            None: the component's `batch_words` setting (e.g.
            `nlp.pipe(texts, component_cfg={"crf_tagger": {"batch_words": 0}})`).
        YIELDS (Doc): the docs, tagged, in order.
        """
        if batch_words is None:
            batch_words = self.cfg["batch_words"]
        error_handler = self.get_error_handler()
        for docs in word_batches(stream, batch_size, _checked_batch_words(batch_words, self.name)):
            try:
                self.set_annotations(docs, self.predict(docs))
            except Exception as e:
                if len(docs) > batch_size:  # a grown batch: again in spaCy's batches
                    for start in range(0, len(docs), batch_size):
                        yield from self._tagged(docs[start : start + batch_size], error_handler)
                else:
                    error_handler(self.name, self, docs, e)
                continue
            yield from docs

    def _tagged(self, docs: List[Doc], error_handler: Callable) -> List[Doc]:
        """The docs tagged, or none of them after the error handler had them."""
        try:
            self.set_annotations(docs, self.predict(docs))
        except Exception as e:
            error_handler(self.name, self, docs, e)
            return []
        return docs

    @_in_torch_threads
    def predict(self, docs: Iterable[Doc]) -> CRFPrediction:
        """Viterbi-decode a batch of docs, without modifying them.

        Docs longer than the `window` setting are read window by window (so
        memory stays bounded); the others are decoded together in one batch.

        docs (Iterable[Doc]): the docs.
        RETURNS (CRFPrediction): label ids per doc, and with store_confidence
            their marginal probabilities.
        """
        scores = self._scores(docs)
        if self._asks_spans:
            return self._predict_with_spans(scores)
        if self.cfg.get("store_confidence"):
            return CRFPrediction(*scores.decode_with_confidence())
        return CRFPrediction(scores.decode())

    @property
    def _asks_spans(self) -> bool:
        """Whether prediction computes entity span posteriors."""
        cfg = self.cfg
        return cfg["target"] == "ents" and bool(
            cfg.get("store_entity_probs") or cfg.get("ents_threshold") or cfg.get("candidates_key") is not None
        )

    def _predict_with_spans(self, scores: DocScores) -> CRFPrediction:
        """Viterbi ids with the decoded entities' posteriors and the
        candidate spans, from one model pass; entities below ents_threshold
        become "O"."""
        labels, scheme = self.labels, self._scheme
        types, patterns = span_patterns(labels, scheme)
        type_ids = {kind: i for i, kind in enumerate(types)}

        def path_spans(path: numpy.ndarray) -> List[Tuple[int, int, int]]:
            offsets = entity_offsets([labels[i] for i in path.tolist()], scheme)
            return [(start, end, type_ids[kind]) for start, end, kind in offsets]

        key = self.cfg.get("candidates_key")
        ids, confidences, spans, probs = scores.decode_with_spans(
            patterns, path_spans, confidence=bool(self.cfg.get("store_confidence")),
            threshold=self.cfg["candidates_threshold"] if key is not None else None,
        )
        least = self.cfg.get("ents_threshold") or 0.0
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
        """Write the predicted labels (and confidences) to the docs.

        docs (Iterable[Doc]): the docs.
        prediction (CRFPrediction): from `predict`; a plain list of label id
            arrays is accepted too.
        """
        if isinstance(docs, Doc):
            docs = [docs]
        docs = list(docs)
        if not isinstance(prediction, CRFPrediction):
            prediction = CRFPrediction(list(prediction))
        self._target.write(
            self.vocab, docs, self.labels, prediction.ids,
            overwrite=self.cfg["overwrite"], scheme=self._scheme,
        )
        if prediction.confidences is not None:
            for doc, confidences in zip(docs, prediction.confidences):
                for token, confidence in zip(doc, confidences.tolist()):
                    token._.crf_confidence = confidence
        if prediction.entity_probs is not None and self.cfg.get("store_entity_probs"):
            for doc, entities, probs in zip(docs, prediction.entities, prediction.entity_probs):
                by_span = dict(zip(entities, probs.tolist()))
                for ent in doc.ents:
                    prob = by_span.get((ent.start, ent.end, ent.label_))
                    if prob is not None:
                        ent._.crf_prob = prob
        key = self.cfg.get("candidates_key")
        if prediction.candidates is not None and key is not None:
            for doc, candidates in zip(docs, prediction.candidates):
                spans = [Span(doc, start, end, label=label) for start, end, label, _ in candidates]
                doc.spans[key] = SpanGroup(doc, name=key, spans=spans)
                doc.spans[key].attrs["scores"] = numpy.asarray([p for *_, p in candidates], dtype="float32")

    @_in_torch_threads
    def marginals(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Exact marginal probability of every label at every token
        (forward-backward over the CRF), batched like `predict`.

        docs (Iterable[Doc]): the docs.
        RETURNS (List[numpy.ndarray]): one (n_tokens, n_labels) float array per
            doc, columns in `labels` order, rows summing to 1.
        """
        return self._scores(docs).marginals()

    @_in_torch_threads
    def nbest(self, docs: Iterable[Doc], k: int) -> List[List[Tuple[List[str], float]]]:
        """The k most probable tag sequences of each doc (exact k-best Viterbi).

        docs (Iterable[Doc]): the docs.
        k (int): sequences per doc.
        RETURNS (List[List[Tuple[List[str], float]]]): per doc, up to k
            (tags, log probability) pairs in descending order; one tag per token.
        """
        per_doc = self._scores(docs).nbest(k)
        return [[([self.labels[i] for i in ids], score) for ids, score in ranked] for ranked in per_doc]

    @_in_torch_threads
    def uncertainty(self, docs: Iterable[Doc]) -> List[Tuple[float, numpy.ndarray]]:
        """How unsure the model is about each doc, for active learning
        (exact, batched like `predict`).

        docs (Iterable[Doc]): the docs.
        RETURNS (List[Tuple[float, numpy.ndarray]]): per doc, the probability
            of its best (Viterbi) tag path, and the entropy (nats) of each
            token's marginal distribution over the labels.
        """
        return [(float(numpy.exp(log_prob)), entropy) for log_prob, entropy in self._scores(docs).uncertainty()]

    def _scores(self, docs: Iterable[Doc], temperature: Optional[float] = None) -> DocScores:
        """The model's scores for the docs, cut as prediction cuts them (long
        docs window by window, by sentence where set), at the component's
        temperature or the one given (1.0: the model's own, for calibration)."""
        if torch_network(self.model) is None:
            raise ValueError(Errors.E009.format(name=self.name))
        return DocScores(
            self.model,
            list(docs),
            window=self.cfg.get("window") or 0,
            temperature=self.temperature if temperature is None else temperature,
            by_sentence=bool(self.cfg.get("by_sentence", False)),
        )

    # Training

    @_in_torch_threads
    def finish_update(self, sgd: Optimizer) -> None:
        """Update the model's weights with the optimizer (after `update`
        with sgd=None, as spacy train does), on the component's threads.

        sgd (Optimizer): the optimizer.
        """
        super().finish_update(sgd)

    @_in_torch_threads
    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch of examples: one CRF NLL gradient step.

        examples (Iterable[Example]): the batch.
        drop (float): the dropout rate of the Thinc layers.
        sgd (Optional[Optimizer]): the optimizer; None accumulates gradients.
        losses (Optional[Dict[str, float]]): the running losses, by component.
        RETURNS (Dict[str, float]): the updated losses.
        """
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "CRFTagger.update")
        if not any(len(eg.predicted) for eg in examples):
            return losses
        docs = [eg.predicted for eg in examples]
        return self._step(docs, lambda batch: self.get_loss(examples, batch), drop, sgd, losses)

    @_in_torch_threads
    def rehearse(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Keep what the component knew while it is fine-tuned: one CRF NLL
        step towards the labels that the rehearsal model (the component as
        `nlp.resume_training()` found it) decodes for the examples' docs; the
        examples' annotations are not read (as spaCy's Tagger rehearses
        towards its earlier scores).

        examples (Iterable[Example]): the batch (raw text is enough).
        drop (float): the dropout rate of the Thinc layers.
        sgd (Optional[Optimizer]): the optimizer; None accumulates gradients.
        losses (Optional[Dict[str, float]]): the running losses, by component.
        RETURNS (Dict[str, float]): the updated losses.
        """
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "CRFTagger.rehearse")
        if self._rehearsal_model is None:
            raise ValueError(Errors.E036.format(name=self.name))
        docs = [eg.predicted for eg in examples]
        if not any(len(doc) for doc in docs):
            return losses
        taught = self._rehearsal_model.predict(docs).decode()
        none_excluded = [numpy.full(len(ids), -1, dtype="int64") for ids in taught]

        def loss_of(batch: CRFBatch) -> Tuple[float, CRFBatch]:
            loss, d_batch = crf_batch_loss(batch, taught, none_excluded)
            if not numpy.isfinite(loss):
                raise ValueError(Errors.E006.format(what="The rehearsal loss", name=self.name))
            return loss, d_batch

        return self._step(docs, loss_of, drop, sgd, losses)

    def _step(
        self,
        docs: List[Doc],
        loss_of: Callable[[CRFBatch], Tuple[float, CRFBatch]],
        drop: float,
        sgd: Optional[Optimizer],
        losses: Dict[str, float],
    ) -> Dict[str, float]:
        """One gradient step of the loss that `loss_of` gives for the docs' scores."""
        set_dropout_rate(self.model, drop)
        batch, backprop = self.model.begin_update(docs)
        loss, d_batch = loss_of(batch)
        backprop(d_batch)
        if sgd not in (None, False):
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    @_in_torch_threads
    def get_loss(self, examples: Iterable[Example], scores: CRFBatch) -> Tuple[float, CRFBatch]:
        """The CRF negative log-likelihood of the gold labels and its gradient.

        Tokens without a gold label (missing or misaligned) allow every label;
        a negative label "!TAG" rules TAG out; with incorrect_spans_key, the
        reference's rejected spans are ruled out as entities of their label;
        a doc with none of these adds 0.

        examples (Iterable[Example]): the batch.
        scores (CRFBatch): the model's output for the batch.
        RETURNS (Tuple[float, CRFBatch]): the summed loss and its gradient.
        """
        examples = list(examples)
        validate_examples(examples, "CRFTagger.get_loss")
        gold, excluded = [], []
        for eg in examples:
            ids, excluded_ids, unknown = gold_ids(self._target.gold_values(eg, self._scheme), self.labels)
            if unknown:
                raise ValueError(Errors.E003.format(name=self.name, label=unknown[0], n_labels=len(self.labels)))
            gold.append(ids)
            excluded.append(excluded_ids)
        rejected, patterns = self._rejected_spans(examples)
        loss, d_scores = crf_batch_loss(scores, gold, excluded, rejected, patterns)
        if not numpy.isfinite(loss):
            what = "The loss" if scores.is_finite() else "The model's scores (emissions or transitions)"
            raise ValueError(Errors.E006.format(what=what, name=self.name))
        return loss, d_scores

    def _rejected_spans(
        self, examples: Sequence[Example]
    ) -> Tuple[Optional[List[List[Tuple[int, int, int]]]], Optional[List[Tuple[int, int, int, int, int]]]]:
        """Per example, the reference's rejected spans (doc.spans[incorrect_spans_key])
        aligned to the predicted tokens, as (start, end, type index); and the
        entity patterns. A rejected span that is also a gold entity (a
        contradiction: the gold wins), that does not align, or whose label is
        not an entity type of the component is left out. (None, None) without
        the setting."""
        key = self.cfg.get("incorrect_spans_key")
        if key is None:
            return None, None
        types, patterns = span_patterns(self.labels, self._scheme)
        index = {kind: i for i, kind in enumerate(types)}
        rejected = []
        for eg in examples:
            group = eg.reference.spans.get(key, [])
            if not len(group):
                rejected.append([])
                continue
            spans = eg.get_aligned_spans_y2x(group, allow_overlap=True)
            gold = {(e.start, e.end, e.label_) for e in eg.get_aligned_spans_y2x(eg.reference.ents)}
            rejected.append([
                (span.start, span.end, index[span.label_]) for span in spans
                if span.label_ in index and (span.start, span.end, span.label_) not in gold
            ])
        return rejected, patterns

    # Serialization: the cfg carries a checksum of itself and the weights;
    # the component's files are written atomically; loading is checked first
    # and leaves the component unchanged on failure.

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize the component to a bytestring.

        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (bytes): the serialized component.
        """
        self._validate_serialization_attrs()
        cfg, model_bytes = self._saved()
        serialize = {
            "cfg": lambda: srsly.json_dumps(cfg),
            "vocab": lambda: self.vocab.to_bytes(exclude=exclude),
            "model": lambda: model_bytes,
        }
        return util.to_bytes(serialize, exclude)

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save the component to a directory: its cfg and model files are
        each written atomically (a kill leaves the old file or the new one).

        path (Union[str, Path]): the directory, created if missing.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        """
        self._validate_serialization_attrs()
        path = util.ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        cfg, model_bytes = self._saved()
        if "vocab" not in exclude:
            self.vocab.to_disk(path / "vocab", exclude=exclude)
        if "model" not in exclude:
            write_atomic(path / "model", model_bytes)
        if "cfg" not in exclude:
            write_atomic(path / "cfg", srsly.json_dumps(cfg, indent=2))

    def _saved(self) -> Tuple[Dict[str, Any], bytes]:
        """The cfg as it is saved, with the checksum of itself and the weights, and the weights."""
        model_bytes = self.model.to_bytes()
        cfg = srsly.json_loads(srsly.json_dumps(self.cfg))  # as loading reads it back
        cfg[CHECKSUM] = checksum(cfg, model_bytes)
        return cfg, model_bytes

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load the component from a bytestring; on failure it is left unchanged.

        bytes_data (bytes): the data, from `to_bytes`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFTagger): the component.
        """
        self._validate_serialization_attrs()
        loaded: Dict[str, Any] = {}
        readers = {key: (lambda b, key=key: loaded.__setitem__(key, b)) for key in ("cfg", "vocab", "model")}
        try:
            util.from_bytes(bytes_data, readers, exclude)
            cfg = srsly.json_loads(loaded["cfg"]) if "cfg" in loaded else None
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        self._load(cfg, loaded.get("model"))
        if "vocab" in loaded:
            self.vocab.from_bytes(loaded["vocab"], exclude=exclude)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load the component from a directory; on failure it is left unchanged.

        path (Union[str, Path]): the directory, from `to_disk`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFTagger): the component.
        """
        self._validate_serialization_attrs()
        path = util.ensure_path(path)
        try:
            cfg = None if "cfg" in exclude else srsly.read_json(path / "cfg")
            model_bytes = None if "model" in exclude else (path / "model").read_bytes()
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        self._load(cfg, model_bytes)
        if "vocab" not in exclude:
            self.vocab.from_disk(path / "vocab", exclude=exclude)
        return self

    def _load(self, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes]) -> None:
        """Check the files, apply cfg and load the weights, or change nothing
        and raise: E007 (unreadable, or not the checksum saved with them),
        E035 (an invalid cfg), E033 (non-finite weights), E008 (weights that
        do not fit the config), E017 (weights that would run code)."""
        if cfg is not None:
            if not isinstance(cfg, dict):
                raise DamagedModelError(Errors.E035.format(name=self.name, reason="it is not a JSON object"))
            cfg = dict(cfg)
            saved_checksum = cfg.pop(CHECKSUM, None)
            if saved_checksum is not None and model_bytes is not None:
                found = checksum(cfg, model_bytes)
                if found != saved_checksum:
                    reason = (
                        f"its cfg and weights have the checksum {found}, not the {saved_checksum} saved "
                        "with them (a damaged or edited file; after editing the cfg on purpose, delete "
                        f"its \"{CHECKSUM}\" entry)"
                    )
                    raise DamagedModelError(Errors.E007.format(name=self.name, reason=reason))
            problem = self._cfg_problem(cfg)
            if problem is not None:
                raise DamagedModelError(Errors.E035.format(name=self.name, reason=problem))
        msg = None
        if model_bytes is not None:
            try:
                msg = srsly.msgpack_loads(model_bytes)
                if not isinstance(msg, dict) or "nodes" not in msg:
                    raise ValueError("no Thinc model in the data")
            except Exception as e:
                raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        backup_cfg, backup_model = copy.deepcopy(self.cfg), self.model.to_bytes()
        try:
            if cfg is not None:
                # saved before spacy-crf had temperatures: the model's own probabilities
                learned = {key: value for key, value in cfg.items() if key not in RUN_SETTINGS}
                self.cfg.update({"temperature": 1.0, **learned})
                self.cfg.pop("input_width", None)  # saved by spacy-crf 0.1.0
            if msg is not None:
                self._forget_output_sizes()
                if not self.model.can_from_dict(msg, strict=False):
                    raise ValueError("the layer sizes in the file differ from the config's")
                self.model.from_dict(msg)
                n_out = self.model.get_ref("output_layer").maybe_get_dim("nO")
                if n_out is not None and n_out != len(self.labels):
                    raise ValueError(f"the file's network has {n_out} labels, the component {len(self.labels)}")
                where = first_non_finite_weight(self.model)
                if where is not None:
                    raise DamagedModelError(Errors.E033.format(name=self.name, where=where))
            set_constraints(self.model, self._constraint_masks())
        except Exception as e:
            self.cfg = backup_cfg
            self._forget_output_sizes()
            self.model.from_bytes(backup_model)
            set_constraints(self.model, self._constraint_masks())
            if isinstance(e, (UnsafeModelError, DamagedModelError)):
                raise
            raise ValueError(Errors.E008.format(name=self.name, detail=str(e))) from e

    def _cfg_problem(self, cfg: Dict[str, Any]) -> Optional[str]:
        """What is wrong with a saved cfg (without its checksum), or None:
        its target, labels (unique strings the target can write) and
        temperature are checked."""
        target = cfg.get("target", self.cfg["target"])
        if target not in TARGETS:
            return f"unknown target {target!r}; expected one of {list(TARGETS)}"
        labels = cfg.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            return f"its labels must be a list of strings, not {labels!r:.80}"
        if len(set(labels)) != len(labels):
            repeated = next(label for label in labels if labels.count(label) > 1)
            return f"the label {repeated!r} is listed more than once"
        unwritable = [label for label in labels if not TARGETS[target].accepts(label)]
        if unwritable:
            return f"target {target!r} cannot write the label {unwritable[0]!r}"
        try:
            _checked_temperature(cfg.get("temperature", 1.0), self.name)
        except ValueError as e:
            return str(e)
        return None

    def _forget_output_sizes(self) -> None:
        """Unset the label count and input width of the output layer (and the
        model's output width): loading rebuilds the network to the file's sizes."""
        output_layer = self.model.get_ref("output_layer")
        for node, dim in ((output_layer, "nI"), (output_layer, "nO"), (self.model, "nO")):
            if node.has_dim(dim) is not False:
                node.set_dim(dim, None, force=True)
