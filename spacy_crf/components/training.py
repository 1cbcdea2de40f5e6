"""Training of the CRF components: `update` (one CRF NLL step on gold
labels), `rehearse` (one step towards what the component decoded before
fine-tuning) and `get_loss`."""

import functools
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from thinc.api import Model, Optimizer, set_dropout_rate

from ..errors import Errors
from ..ml import CRFBatch, crf_batch_loss, is_built
from ..targets import gold_ids, partial_gold
from ..threads import checked_threads, in_torch_threads, torch_threads

if TYPE_CHECKING:
    from ..targets import Target

TRANSFORMER_LISTENER = "transformer-listener"  # spacy-transformers' TransformerListener


def listens_to_a_transformer(model) -> bool:
    """Whether the model reads an upstream transformer through its listener."""
    return any(node.name == TRANSFORMER_LISTENER for node in model.walk())


def in_training_threads(method):
    """update and rehearse: `in_torch_threads`, except that with "auto" threads
    (0) a component that listens to an upstream transformer keeps the
    process's thread count. The transformer's backward pass runs inside this
    update (the listener passes the gradient up), and it is a large
    computation that one thread would slow down about twofold, as it would
    not under spaCy's own components."""

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        threads = checked_threads(self)
        if threads == 0 and listens_to_a_transformer(self.model):
            return method(self, *args, **kwargs)
        with torch_threads(threads):
            return method(self, *args, **kwargs)

    return wrapped


# per example, the rejected spans (start, end, type index); and the span patterns
RejectedSpans = Tuple[Optional[List[List[Tuple[int, int, int]]]], Optional[List[Tuple[int, int, int, int, int]]]]


class TrainingMixin:
    """The training methods of CRFComponent."""

    if TYPE_CHECKING:
        # what CRFComponent (base.py) provides, for the type checker: the
        # attributes are set in CRFComponent.__init__, which declares them
        name: str
        cfg: Dict[str, Any]
        model: Model[List[Doc], CRFBatch]
        learn_new_labels: bool
        _rehearsal_model: Optional[Model[List[Doc], CRFBatch]]

        @property
        def tags(self) -> Tuple[str, ...]: ...

        @property
        def target(self) -> "Target": ...

        def _check_label(self, label: str) -> None: ...

        def _grow(self, tags: Sequence[str]) -> None: ...

        def _check_label_count(self, n_new: int) -> None: ...

        def _unchanged_on_failure(self) -> ContextManager[None]: ...

        def _unknown_label_error(self, tag: str) -> str: ...

    @in_torch_threads
    def finish_update(self, sgd: Optimizer) -> None:
        """Update the model's weights with the optimizer (after `update`
        with sgd=None, as spacy train does), on the component's threads.

        sgd (Optimizer): the optimizer.
        """
        TrainablePipe.finish_update(self, sgd)
        self.cfg["trained"] = True

    @in_training_threads
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
        examples, losses = self._begin_step(examples, losses, "update")
        if not any(len(eg.predicted) for eg in examples):
            return losses
        if self.learn_new_labels and is_built(self.model):
            unseen = sorted(self.target.labels_in(examples, known=self.tags) - set(self.tags))
            for label in unseen:
                self._check_label(label)
            self._check_label_count(len(unseen))
            with self._unchanged_on_failure():
                self._grow(unseen)
        docs = [eg.predicted for eg in examples]
        return self._step(docs, lambda batch: self.get_loss(examples, batch), drop, sgd, losses)

    @in_training_threads
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
        examples, losses = self._begin_step(examples, losses, "rehearse")
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

    def _begin_step(
        self, examples: Iterable[Example], losses: Optional[Dict[str, float]], method: str
    ) -> Tuple[List[Example], Dict[str, float]]:
        """The examples as a list, checked (spaCy's validate_examples, naming
        `method`), and the running losses with this component's entry."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.{method}")
        return examples, losses

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

    @in_torch_threads
    def get_loss(self, examples: Iterable[Example], scores: CRFBatch) -> Tuple[float, CRFBatch]:
        """The CRF negative log-likelihood of the gold labels and its gradient.

        Tokens without a gold label (missing or misaligned) allow every label;
        a label known in part (crf_morphologizer: a UPOS without features, or
        features without a UPOS) allows the labels that agree with it;
        a negative label "!TAG" rules TAG out; crf_ner with incorrect_spans_key
        rules the reference's rejected spans out as entities of their label;
        a doc with none of these adds 0.

        examples (Iterable[Example]): the batch.
        scores (CRFBatch): the model's output for the batch.
        RETURNS (Tuple[float, CRFBatch]): the summed loss and its gradient.
        """
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.get_loss")
        gold, excluded = [], []
        for eg in examples:
            ids, excluded_ids, unknown = gold_ids(self.target.gold_values(eg), self.tags)
            if unknown:
                raise ValueError(self._unknown_label_error(unknown[0]))
            gold.append(ids)
            excluded.append(excluded_ids)
        groups, unmatched = partial_gold(self.target, examples, self.tags, gold)
        if unmatched:
            raise ValueError(self._unknown_label_error(unmatched[0]))
        rejected, patterns = self._rejected_spans(examples)
        loss, d_scores = crf_batch_loss(scores, gold, excluded, rejected, patterns, groups=groups)
        if not numpy.isfinite(loss):
            what = "The loss" if scores.is_finite() else "The model's scores (emissions or transitions)"
            raise ValueError(Errors.E006.format(what=what, name=self.name))
        return loss, d_scores

    def _rejected_spans(self, examples: Sequence[Example]) -> RejectedSpans:
        """Per example, the spans known not to be entities, and the span
        patterns; (None, None): none (crf_ner overrides this)."""
        return None, None
