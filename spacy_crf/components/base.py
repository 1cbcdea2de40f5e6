"""`CRFComponent`: what crf_tagger, crf_morphologizer and crf_ner share (the
model call, labels, prediction, the probabilities beyond the labels). Training
is in training.py, saving and loading in saving.py; each subclass says what its
labels mean (its target) and adds its own settings. spaCy glue only: the model
(spacy_crf.ml) turns docs into CRF scores and decodes them."""

import contextlib
import unicodedata
from itertools import islice
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Token
from spacy.training import Example, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model

from ..batching import word_batches
from ..bounds import MAX_LABELS, MAX_NBEST
from ..errors import Errors
from ..ml import (
    CRFBatch,
    DocScores,
    add_labels,
    any_shim,
    check_quantize,
    count_known_words,
    crf_shim,
    is_built,
    set_constraints,
    set_label_classes,
    set_label_parts,
    set_quantize,
    uses_label_classes,
    uses_label_parts,
)
from ..targets import UPOS_TAGS, Target, allowed_transitions, growth_plan, label_classes, label_parts
from ..threads import in_torch_threads
from .distillation import DistillationMixin
from .saving import SavingMixin, checked_temperature
from .settings import BATCH_WORDS, LEARN_NEW_LABELS, QUANTIZE, THREADS, Setting, check_setting, checked_cfg

if not Token.has_extension("crf_confidence"):
    Token.set_extension("crf_confidence", default=None)


class CRFPrediction(NamedTuple):
    """What `predict` returns for a batch and `set_annotations` writes.

    ids (List[numpy.ndarray]): per doc, the Viterbi label id of each token.
    confidences (Optional[List[numpy.ndarray]]): per doc, each predicted
        label's marginal probability (with store_confidence), else None.
    entities (Optional[List[List[Tuple[int, int, str]]]]): crf_ner with span
        probabilities asked for: per doc, the (start, end, label) of each
        entity of the decoded path that is kept (see its threshold).
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


def check_label_text(label: str, name: str, *, empty: bool = False) -> None:
    """E043 unless a label is a non-empty string (empty: or "", where the
    target reads it, as a morphologizer reads "" as no features) of printable
    characters that UTF-8 encodes (no lone surrogate, no control character or
    line break)."""
    reason = None
    if not label and not empty:
        reason = "it is empty"
    else:
        try:
            label.encode("utf8")
        except UnicodeEncodeError as err:
            reason = f"it has a lone surrogate at character {err.start}"
        else:
            for i, char in enumerate(label):
                if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
                    reason = f"it has the control character {char!r} at character {i}"
                    break
    if reason is not None:
        raise ValueError(Errors.E043.format(label=label, name=name, reason=reason))


def check_nbest_k(k: Any) -> int:
    """k, or E044 unless it is a whole number from 1 to MAX_NBEST."""
    bound = MAX_NBEST.value()
    if isinstance(k, bool) or not isinstance(k, (int, numpy.integer)):
        why = f"got a {type(k).__name__}"
    elif k < 1:
        why = "at least one path is asked for"
    elif k > bound:
        why = f"{MAX_NBEST.name} are bounded"
    else:
        return int(k)
    raise ValueError(Errors.E044.format(k=k, bound=f"{bound:,}", why=why, how=MAX_NBEST.how_to_raise()))


class CRFComponent(DistillationMixin, SavingMixin, TrainablePipe):
    """A pipeline component whose output layer is a linear-chain CRF.

    Training minimises the CRF negative log-likelihood (tokens without a gold
    label are summed over), distillation the KL divergence from a teacher's
    distribution; prediction is batched Viterbi decoding. A subclass
    sets TARGETS (its targets by name) or overrides `_target`, and may add
    settings to cfg.
    """

    TARGETS: Mapping[str, Target] = {}
    # the component's settings (settings.py), for the docs and the factory's defaults
    SETTINGS: Tuple[Setting, ...] = ()
    # the factory's name (the default component name)
    FACTORY = ""
    # what a user calls one of `labels`, in messages
    LABEL_KIND = "label"

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str,
        *,
        scorer: Optional[Callable],
        cfg: Dict[str, Any],
        threads: int,
        quantize: str,
        learn_new_labels: bool,
    ) -> None:
        """Initialize the component: a subclass passes each of its settings
        (`SETTINGS`), every one checked (E039).

        vocab (Vocab): the pipeline's vocab.
        model (Model[List[Doc], CRFBatch]): the network.
        name (str): the component's name.
        scorer (Optional[Callable]): the scorer; None for none.
        cfg (Dict[str, Any]): the settings held in cfg (`Setting.in_cfg`), by name.
        threads (int): see `THREADS`.
        quantize (str): see `QUANTIZE`.
        learn_new_labels (bool): see `LEARN_NEW_LABELS`.
        """
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        # the model as nlp.resume_training() found it, for `rehearse`
        self._rehearsal_model: Optional[Model] = None
        # the settings that are attributes (in the pipeline's config.cfg, not in cfg)
        self.threads: int = check_setting(THREADS, threads, name)
        self.learn_new_labels: bool = check_setting(LEARN_NEW_LABELS, learn_new_labels, name)
        self.quantize = quantize  # a property: checked (E039, E027) and set on the network
        cfg = {
            "labels": [],
            "target": next(iter(self.TARGETS)),
            # learned after training, like the labels: see `temperature`
            "temperature": 1.0,
            # whether an optimizer ever updated the weights (finish_update)
            "trained": False,
            **checked_cfg(self.SETTINGS, cfg, name),
        }
        self.cfg = dict(sorted(cfg.items()))

    @property
    def quantize(self) -> str:
        """ "none", "int8" or "bf16": CPU prediction through an int8 (bfloat16)
        copy of the network."""
        return any_shim(self.model).quantize

    @quantize.setter
    def quantize(self, mode: str) -> None:
        check_setting(QUANTIZE, mode, self.name)
        check_quantize(mode, self.name)  # E027: int8 where this torch cannot quantize
        set_quantize(self.model, mode)

    @property
    def tags(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the CRF's labels, in the order of its columns
        (of `marginals`; crf_ner: the scheme's tags, "B-PER", ..., "O")."""
        return tuple(self.cfg["labels"])

    @property
    def labels(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels the component writes: its `tags`
        (crf_ner: the entity types)."""
        return self.tags

    @property
    def label_data(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, for `spacy init labels`."""
        return self.labels

    @property
    def temperature(self) -> float:
        """The temperature tau of the CRF's probabilities, saved in cfg with
        the component (a pipeline saved without it reads 1.0).

        Every probability the component gives (marginals, store_confidence,
        entity posteriors, candidates, n-best, uncertainty) is that of
        P_tau(y | x), proportional to exp(Score(x, y) / tau): tau > 1 softens
        them, tau < 1 sharpens them. The decoded labels never change.
        `python -m spacy_crf calibrate` fits it on annotated docs.

        RETURNS (float): tau > 0; 1.0, the model's own probabilities, by default.
        """
        return float(self.cfg["temperature"])

    @temperature.setter
    def temperature(self, value: float) -> None:
        self.cfg["temperature"] = checked_temperature(value, self.name)

    @property
    def target(self) -> Target:
        """What the labels mean: how they are read from and written to docs."""
        return self.TARGETS[self.cfg["target"]]

    def _write_options(self) -> Dict[str, Any]:
        """The settings that say how labels are written (`Target.write`)."""
        return {"overwrite": self.cfg["overwrite"]}

    def _constraint_scheme(self) -> str:
        """The tag scheme whose invalid transitions get probability 0, or "none"."""
        return "none"

    def add_label(self, label: str) -> int:
        """Add a label, before or after the model is initialized and trained.

        Added to a trained model, the label starts from the scores of an old
        one less a margin (see `spacy_crf.nn.growth`): no prediction changes
        until training on examples of it (e.g. after `nlp.resume_training()`)
        teaches it.

        label (str): the label (crf_ner: an entity type adds the scheme's tags for it).
        RETURNS (int): 0 if the label was already present, otherwise 1.
        """
        if not isinstance(label, str):
            raise ValueError(Errors.E010.format(type=type(label).__name__, label=label))
        check_label_text(label, self.name, empty=True)  # before expand_label reads it
        tags = self.target.expand_label(label)
        for tag in tags:
            self._check_label(tag)
        new = [tag for tag in dict.fromkeys(tags) if tag not in self.tags]
        self._check_label_count(len(new))
        with self._unchanged_on_failure():
            if is_built(self.model):
                self._grow(new)
                return int(bool(new))
            return max(self._add(tag) for tag in tags)

    @contextlib.contextmanager
    def _unchanged_on_failure(self) -> Iterator[None]:
        """Run the block; where it raises, put the labels and the network
        back as they were before it, then raise."""
        labels = list(self.cfg["labels"])
        # a built model grows on torch (E050 without it, before anything changes)
        shim = crf_shim(self.model) if is_built(self.model) else None
        snapshot = shim.snapshot() if shim is not None else None
        output_layer = self.model.get_ref("output_layer")
        n_out = output_layer.maybe_get_dim("nO")
        try:
            yield
        except BaseException:
            self.cfg["labels"] = labels
            if shim is not None and snapshot is not None:
                shim.restore(snapshot)
                output_layer.set_dim("nO", n_out, force=True)  # type: ignore[arg-type]  # None unsets it; the stub says int
                set_constraints(self.model, self._constraint_masks())
            raise

    def _check_label_count(self, n_new: int) -> None:
        """E045 where `n_new` more labels would go over MAX_LABELS."""
        bound = MAX_LABELS.value()
        if len(self.tags) + n_new > bound:
            raise ValueError(
                Errors.E045.format(
                    name=self.name,
                    n=f"{len(self.tags) + n_new:,}",
                    bound=f"{bound:,}",
                    what=MAX_LABELS.name,
                    how=MAX_LABELS.how_to_raise(),
                )
            )

    def _grow(self, tags: Sequence[str]) -> None:
        """Add new labels (checked, not yet present) to the built model, after
        the old ones, each starting from its donor's scores."""
        if not tags:
            return
        plan = growth_plan(self.target, self.tags, tags, self._constraint_scheme())
        for tag in tags:
            self._add(tag)
        add_labels(
            self.model,
            plan.donors,
            classes=plan.classes if uses_label_classes(self.model) else None,
            class_sources=plan.class_sources if uses_label_classes(self.model) else None,
            parts=plan.parts if uses_label_parts(self.model) else None,
            part_sources=plan.part_sources if uses_label_parts(self.model) else None,
        )
        set_constraints(self.model, self._constraint_masks())

    def _unknown_label_error(self, tag: str) -> str:
        """E003 for a gold label the component does not have, in the terms
        of `labels` (crf_ner: the entity type of a tag, and how many types)."""
        return Errors.E003.format(
            name=self.name, kind=self.LABEL_KIND, label=self._label_of_tag(tag), n_labels=len(self.labels)
        )

    def _label_of_tag(self, tag: str) -> str:
        """The label of `labels` that a CRF label belongs to (itself here)."""
        return tag

    def _check_label(self, label: str) -> None:
        check_label_text(label, self.name)
        if not self.target.accepts(label):
            raise ValueError(Errors.E002.format(label=label, name=self.name, options=UPOS_TAGS))

    def _add(self, label: str) -> int:
        if label in self.tags:
            return 0
        self._check_label(label)
        self._check_label_count(1)
        self.vocab.strings.add(label)
        self.cfg["labels"].append(label)
        return 1

    @in_torch_threads
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
        validate_get_examples(get_examples, f"{type(self).__name__}.initialize")
        util.check_lexeme_norms(self.vocab, self.name)
        if labels is not None and not len(labels):
            raise ValueError(Errors.E012.format(name=self.name))
        if labels is None:
            labels = sorted(set(self.tags) | self.target.labels_in(get_examples(), known=self.tags))
        tags = list(dict.fromkeys(tag for label in labels for tag in self.target.expand_label(label)))
        for tag in tags:
            self._check_label(tag)
        self.cfg["labels"], previous = [], self.cfg["labels"]
        try:
            self._check_label_count(len(tags))
        except ValueError:
            self.cfg["labels"] = previous
            raise
        self.cfg["trained"] = False
        for tag in tags:
            self._add(tag)
        if not self.tags:
            self._initialize_without_labels()
        if not self.tags:
            raise ValueError(Errors.E005.format(name=self.name, target=self.cfg["target"], attr=self.target.writes))
        masks = self._constraint_masks()  # E013 early
        models = [self.model] + ([proc.model for _, proc in nlp.pipeline if hasattr(proc, "model")] if nlp else [])
        count_known_words(models, lambda: (example.x for example in get_examples()))
        doc_sample = [example.x for example in islice(get_examples(), 10)]
        classes = label_classes(self.target, self.tags)
        if classes is None and uses_label_classes(self.model):
            raise ValueError(Errors.E023.format(name=self.name, target=self.cfg["target"]))
        set_label_classes(self.model, classes)
        parts = label_parts(self.target, self.tags)
        if (parts is None or not any(parts)) and uses_label_parts(self.model):
            raise ValueError(Errors.E029.format(name=self.name, target=self.cfg["target"]))
        set_label_parts(self.model, parts)
        if any(node.name == "static_vectors" for node in self.model.walk()) and not self.vocab.vectors.shape[0]:
            raise ValueError(Errors.E060.format(name=self.name))
        self.model.get_ref("output_layer").set_dim("nO", len(self.tags), force=True)
        self.model.initialize(X=doc_sample)
        set_constraints(self.model, masks)

    def _initialize_without_labels(self) -> None:
        """What initialize does where neither the examples nor add_label gave
        a label: nothing here (E005 follows); crf_ner takes "O" alone."""

    def _constraint_masks(self) -> Optional[Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]]:
        """The scheme's allowed transitions, starts and ends; None for "none"."""
        scheme = self._constraint_scheme()
        if scheme == "none" or not self.tags:
            return None
        return allowed_transitions(self.tags, scheme)

    # Prediction: predict() returns everything set_annotations() writes.

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128, batch_words: Optional[int] = None) -> Iterator[Doc]:
        """Tag a stream of docs, batch by batch, as spaCy's components do,
        except that a batch of `batch_size` docs grows by whole docs until it
        holds at least `batch_words` tokens (see `word_batches`). Where a
        grown batch fails, its docs are tried again `batch_size` at a time,
        so that the error handler is given only the docs of the failing part.

        stream (Iterable[Doc]): the docs.
        batch_size (int): the least number of docs in a batch.
        batch_words (Optional[int]): the least number of tokens in a batch;
            None: the component's `batch_words` setting.
        YIELDS (Doc): the docs, tagged, in order.
        """
        if batch_words is None:
            batch_words = self.cfg["batch_words"]
        error_handler = self.get_error_handler()
        for docs in word_batches(stream, batch_size, check_setting(BATCH_WORDS, batch_words, self.name)):
            if len(docs) <= batch_size:
                yield from self._tagged(docs, error_handler)
                continue
            try:
                self.set_annotations(docs, self.predict(docs))
            except Exception:  # a grown batch: again in spaCy's batches
                for start in range(0, len(docs), batch_size):
                    yield from self._tagged(docs[start : start + batch_size], error_handler)
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

    @in_torch_threads
    def predict(self, docs: Iterable[Doc]) -> CRFPrediction:
        """Viterbi-decode a batch of docs, without modifying them.

        Docs longer than the `window` setting are read window by window (so
        memory stays bounded); the others are decoded together in one batch.

        docs (Iterable[Doc]): the docs.
        RETURNS (CRFPrediction): label ids per doc, and with store_confidence
            their marginal probabilities.
        """
        return self._decode(self._scores(docs))

    def _decode(self, scores: DocScores) -> CRFPrediction:
        """The prediction of the docs' scores."""
        if self.cfg["store_confidence"]:
            return CRFPrediction(*scores.decode_with_confidence())
        return CRFPrediction(scores.decode())

    def set_annotations(self, docs: Iterable[Doc], prediction: Union[CRFPrediction, List[numpy.ndarray]]) -> None:
        """Write the predicted labels (and confidences) to the docs.

        docs (Iterable[Doc]): the docs.
        prediction (CRFPrediction): from `predict`; a plain list of label id
            arrays is accepted too.
        """
        docs = [docs] if isinstance(docs, Doc) else list(docs)
        if not isinstance(prediction, CRFPrediction):
            prediction = CRFPrediction(list(prediction))
        self.target.write(self.vocab, docs, self.tags, prediction.ids, **self._write_options())
        if prediction.confidences is not None:
            for doc, confidences in zip(docs, prediction.confidences):
                for token, confidence in zip(doc, confidences.tolist()):
                    token._.crf_confidence = confidence

    @in_torch_threads
    def marginals(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Exact marginal probability of every label at every token
        (forward-backward over the CRF), batched like `predict`.

        docs (Iterable[Doc]): the docs.
        RETURNS (List[numpy.ndarray]): one (n_tokens, n_labels) float array per
            doc, columns in `labels` order, rows summing to 1.
        """
        return self._scores(docs).marginals()

    @in_torch_threads
    def nbest(self, docs: Iterable[Doc], k: int) -> List[List[Tuple[List[str], float]]]:
        """The k most probable tag sequences of each doc (exact k-best Viterbi).

        docs (Iterable[Doc]): the docs.
        k (int): sequences per doc, from 1 to `spacy_crf.bounds.MAX_NBEST`
            (E044); a doc with fewer paths gives them all.
        RETURNS (List[List[Tuple[List[str], float]]]): per doc, up to k
            (tags, log probability) pairs in descending order; one tag per token.
        """
        check_nbest_k(k)
        per_doc = self._scores(docs).nbest(k)
        return [[([self.tags[i] for i in ids], score) for ids, score in ranked] for ranked in per_doc]

    @in_torch_threads
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
        if not is_built(self.model):
            raise ValueError(Errors.E009.format(name=self.name))
        return DocScores(
            self.model,
            list(docs),
            window=self.cfg["window"],
            temperature=self.temperature if temperature is None else temperature,
            by_sentence=self.cfg["by_sentence"],
        )
