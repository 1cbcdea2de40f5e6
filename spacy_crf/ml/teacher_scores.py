"""A teacher's CRF scores for distillation: per doc, the emission scores of
its tokens, with the teacher's transition, start and end scores, all at the
teacher's temperature and in a student's label order.

They define the teacher's whole distribution over label paths (its exact
token and pairwise marginals come from one forward-backward pass over them),
so a student distils from them on its own rows (`on_rows`): each row of the
student's batch is read as a CRF sequence of the teacher's scores. They are
what the distillation command caches on disk: the teacher (a transformer,
say) runs once per doc, and the marginals are recomputed from its scores in
every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, List, Optional, Sequence, Tuple

import numpy
from thinc.api import Model

from ..errors import Errors
from ..optional import has_torch
from .bilstm_crf import torch_network
from .crf_batch import CRFBatch, grid_index, temper

if TYPE_CHECKING or has_torch():  # distillation trains: it needs torch (spacy-crf[torch])
    import torch

    from ..nn import CRFScores
    from ..nn.constraints import forbid


@dataclass
class TeacherScores:
    """A teacher's scores for some docs.

    tags (Tuple[str, ...]): the labels, in the order of the columns.
    emissions (List[numpy.ndarray]): per doc, (n_tokens, K) float32
        emission scores, at the teacher's temperature.
    transitions (numpy.ndarray): (K, K) float32, the transition scores at
        the teacher's temperature; NEG_INF where its constraints forbid.
    start (numpy.ndarray): (K,) float32. end (numpy.ndarray): (K,) float32.
    classes (Optional[numpy.ndarray]): (K,) int64 class ids of a
        class-factored matrix (see `spacy_crf.nn.factored`), else None.
    """

    tags: Tuple[str, ...]
    emissions: List[numpy.ndarray]
    transitions: numpy.ndarray
    start: numpy.ndarray
    end: numpy.ndarray
    classes: Optional[numpy.ndarray] = None

    def aligned(self, tags: Sequence[str], name: str) -> "TeacherScores":
        """The same scores with their columns in the order of `tags` (a
        student's), or E066 naming the labels one side lacks.

        tags (Sequence[str]): the student's labels. name (str): the student's name.
        """
        if tuple(tags) == self.tags:
            return self
        if set(tags) != set(self.tags) or len(tags) != len(self.tags):
            raise ValueError(
                Errors.E066.format(
                    name=name,
                    student_only=sorted(set(tags) - set(self.tags)),
                    teacher_only=sorted(set(self.tags) - set(tags)),
                )
            )
        where = {tag: i for i, tag in enumerate(self.tags)}
        order = numpy.asarray([where[tag] for tag in tags], dtype="int64")
        return TeacherScores(
            tuple(tags),
            [e[:, order] for e in self.emissions],
            self.transitions[numpy.ix_(order, order)],
            self.start[order],
            self.end[order],
            None if self.classes is None else self.classes[order],
        )

    def on_rows(self, batch: CRFBatch) -> CRFScores:
        """The teacher's scores on the rows of a student's batch of the same
        docs: its emissions laid out as the batch's, its mask, the teacher's
        parameters, float32 on the batch's device.

        batch (CRFBatch): the student's output for the docs, in order.
        RETURNS (CRFScores): the teacher's scores, row for row.
        """
        mask = batch.scores.mask
        device = mask.device
        rows, width = tuple(mask.shape)
        K = len(self.tags)
        grid = numpy.zeros((rows * width, K), dtype="float32")
        if self.emissions:
            grid[grid_index(batch.row_lengths, width)] = numpy.concatenate(self.emissions)
        classes = None if self.classes is None else torch.from_numpy(self.classes).to(device)
        return CRFScores(
            torch.from_numpy(grid.reshape(rows, width, K)).to(device),
            mask,
            torch.from_numpy(self.transitions).to(device),
            torch.from_numpy(self.start).to(device),
            torch.from_numpy(self.end).to(device),
            classes,
        )


def crf_parameters(
    model: Model, temperature: float
) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, Optional[numpy.ndarray]]:
    """The CRF's transition, start and end scores of a built BiLSTMCRF model
    as its probabilities read them: constrained (NEG_INF where forbidden)
    and at the temperature; and its class ids where the matrix is factored
    (None with constraints, which break the factored form, or full transitions).

    RETURNS (Tuple): transitions (K, K), start (K,), end (K,) float32, classes (K,) int64 or None.
    """
    network = torch_network(model)
    if network is None:
        raise ValueError(Errors.E009.format(name=model.name))
    with torch.no_grad():
        transitions, start, end = network.transition_scores(), network.start, network.end
        classes = network.label_classes
        if network.allowed_transitions is not None:
            assert network.allowed_start is not None and network.allowed_end is not None  # set together
            transitions, start, end = forbid(
                transitions, start, end, network.allowed_transitions, network.allowed_start, network.allowed_end
            )
            classes = None
        mask = torch.zeros(0, 0, dtype=torch.bool, device=start.device)
        tempered = temper(CRFScores(start.new_zeros(0, 0, start.shape[0]), mask, transitions, start, end), temperature)
    host = [t.detach().float().cpu().numpy() for t in (tempered.transitions, tempered.start, tempered.end)]
    return host[0], host[1], host[2], None if classes is None else classes.cpu().numpy().astype("int64")


def teacher_scores(
    model: Model,
    tags: Sequence[str],
    n_docs: int,
    parts: Iterable[Tuple[List[int], int, CRFBatch]],
    temperature: float,
) -> TeacherScores:
    """Gather a teacher's scores per doc from the parts it scored its docs
    in (`DocScores.parts`: the short docs together, long ones window by
    window).

    model: the teacher's built BiLSTMCRF model. tags (Sequence[str]): its labels.
    n_docs (int): the number of docs. parts: (doc indices, offset, batch) of each part.
    temperature (float): the teacher's tau.
    RETURNS (TeacherScores): the teacher's scores for the docs, in its own label order.
    """
    pieces: List[List[numpy.ndarray]] = [[] for _ in range(n_docs)]
    for doc_ids, _, batch in parts:
        if not sum(batch.doc_lengths):
            for i in doc_ids:
                pieces[i].append(numpy.zeros((0, len(tags)), dtype="float32"))
            continue
        with torch.no_grad():
            grid = temper(batch.scores, temperature).emissions.float().cpu().numpy()  # one copy
        for i, doc_emissions in zip(doc_ids, batch.split(grid)):
            pieces[i].append(doc_emissions)
    transitions, start, end, classes = crf_parameters(model, temperature)
    emissions = [p[0] if len(p) == 1 else numpy.concatenate(p) for p in pieces]
    return TeacherScores(tuple(tags), emissions, transitions, start, end, classes)
