"""Distillation of the CRF components: `distill` (one step towards a
teacher's distribution over label paths) and `get_teacher_student_loss`,
with the meaning of spaCy v4's `TrainablePipe.distill`; and
`teacher_scores`, what a component hands a student when it teaches.

The loss is the exact sequence-level KL(teacher || student) of
`spacy_crf.nn.divergence`: no gold labels are read. The teacher's
distribution is its constrained one at its temperature (`temperature`,
fitted by `python -m spacy_crf calibrate`); the student's is at its own
scores, with its own constraints.
"""

from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Tuple

import numpy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Optimizer

from ..engine import NEG_INF
from ..errors import Errors
from ..ml import CRFBatch, DocScores
from ..ml.batch_loss import distillation_batch_loss
from ..ml.teacher_scores import TeacherScores, teacher_scores
from ..threads import in_torch_threads
from .training import TrainingMixin, in_training_threads


class DistillationMixin(TrainingMixin):
    """The distillation methods of CRFComponent (on top of its training
    methods: a distillation step is a training step of another loss)."""

    if TYPE_CHECKING:
        # what CRFComponent (base.py) provides beyond TrainingMixin's, declared for the type checker only
        @property
        def temperature(self) -> float: ...

        def _scores(self, docs: Iterable[Doc], temperature: Optional[float] = None) -> DocScores: ...

        def _constraint_scheme(self) -> str: ...

        def _constraint_masks(self) -> Optional[Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]]: ...

    @in_torch_threads
    def teacher_scores(self, docs: Iterable[Doc]) -> TeacherScores:
        """The component's CRF scores for the docs, as a teacher hands them
        to a student: per doc its tokens' emission scores, with its
        transition, start and end scores, constrained and at its temperature.
        The docs are read as `predict` reads them (window by window, by
        sentence where set); they must carry what the components before it
        set (e.g. a transformer's output).

        docs (Iterable[Doc]): the docs.
        RETURNS (TeacherScores): the scores, in the order of `tags`.
        """
        docs = list(docs)
        scores = self._scores(docs)
        # on the torch-free engine (SPACY_CRF_ENGINE=numpy), as the torch path's batches
        parts = ((ids, offset, b if isinstance(b, CRFBatch) else b.to_torch()) for ids, offset, b in scores.parts())
        return teacher_scores(self.model, self.tags, len(docs), parts, self.temperature)

    @in_training_threads
    def distill(
        self,
        teacher_pipe: Any,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a teacher: one gradient step of the exact KL divergence
        from the teacher's distribution over label paths to the component's.
        No gold annotation is read.

        teacher_pipe (Any): the teacher: a crf_tagger, crf_morphologizer or
            crf_ner with the same labels (in any order), or anything with
            `teacher_scores(docs)` (e.g. cached scores of one).
        examples (Iterable[Example]): the batch: example.reference is the
            teacher's doc, example.predicted the student's (the same tokens).
        drop (float): the dropout rate of the Thinc layers.
        sgd (Optional[Optimizer]): the optimizer; None accumulates gradients.
        losses (Optional[Dict[str, float]]): the running losses, by component.
        RETURNS (Dict[str, float]): the updated losses.
        """
        examples, losses = self._begin_step(examples, losses, "distill")
        for i, eg in enumerate(examples):
            if len(eg.reference) != len(eg.predicted):
                raise ValueError(
                    Errors.E067.format(
                        name=self.name, index=i, n_teacher=len(eg.reference), n_student=len(eg.predicted)
                    )
                )
        if not hasattr(teacher_pipe, "teacher_scores"):
            raise ValueError(Errors.E065.format(name=self.name, teacher=type(teacher_pipe).__name__))
        if not any(len(eg.predicted) for eg in examples):
            return losses
        teacher = teacher_pipe.teacher_scores([eg.reference for eg in examples])
        docs = [eg.predicted for eg in examples]
        return self._step(docs, lambda batch: self.get_teacher_student_loss(teacher, batch), drop, sgd, losses)

    @in_torch_threads
    def get_teacher_student_loss(
        self, teacher_scores: TeacherScores, student_scores: CRFBatch
    ) -> Tuple[float, CRFBatch]:
        """The summed KL(teacher || student) over the student's rows and its
        gradient: each row of the student's batch read as a CRF sequence of
        the teacher's scores and of the student's (see
        `spacy_crf.nn.divergence`; exact, from the teacher's token and
        pairwise marginals).

        teacher_scores (TeacherScores): the teacher's `teacher_scores` of the
            docs (its labels the student's, in any order).
        student_scores (CRFBatch): the student's output for the same docs.
        RETURNS (Tuple[float, CRFBatch]): the loss and its gradient.
        """
        teacher = teacher_scores.aligned(self.tags, self.name)
        self._check_teacher_constraints(teacher)
        loss, d_scores = distillation_batch_loss(student_scores, teacher)
        if not numpy.isfinite(loss):
            what = "The distillation loss" if student_scores.is_finite() else "The model's scores"
            raise ValueError(Errors.E006.format(what=what, name=self.name))
        return loss, d_scores

    def _check_teacher_constraints(self, teacher: TeacherScores) -> None:
        """E068 where the student's constraints forbid a transition, first or
        last label that the teacher's allow."""
        masks = self._constraint_masks()
        if masks is None:
            return
        transitions, start, end = masks
        tags = self.tags
        forbidden = [
            (f"the transition {tags[i]} -> {tags[j]}", i)
            for i, j in zip(*numpy.nonzero((teacher.transitions > NEG_INF / 2) & ~transitions))
        ]
        forbidden += [
            (f"{tags[i]} as a first label", i) for i in numpy.flatnonzero((teacher.start > NEG_INF / 2) & ~start)
        ]
        forbidden += [(f"{tags[i]} as a last label", i) for i in numpy.flatnonzero((teacher.end > NEG_INF / 2) & ~end)]
        if forbidden:
            raise ValueError(Errors.E068.format(name=self.name, scheme=self._constraint_scheme(), what=forbidden[0][0]))
