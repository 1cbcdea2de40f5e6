"""The calibration job (`python -m spacy_crf calibrate`): load a pipeline,
fit the temperature tau of a spacy-crf component's probabilities on
annotated docs (`spacy_crf.calibration.temperature`), measure their
calibration before and after, and save the component with the fitted tau.

The component's probabilities are those of P_tau(y | x), proportional to
exp(Score(x, y) / tau) (see `CRFComponent.temperature`); decoding does not
depend on tau. The fit minimises, by default (objective "tokens"), the
negative log-likelihood of the gold labels, summed over the docs with partial
labels summed over as in training; with objective "entities" (target "ents"),
the log loss of the decoded entities' posteriors against whether each is
exactly a gold entity, which is what a user of `span._.crf_prob` and
`ents_threshold` reads. The network runs once: the CRF scores of the docs are
kept (`GoldScores`), and each tried tau reruns only the CRF's forward pass.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union, cast

import numpy
from spacy.language import Language
from spacy.training import Corpus, Example

from .calibration import Outcomes, entity_outcomes, token_outcomes
from .calibration.temperature import CalibrationReport, TemperatureFit, fit_temperature
from .components import CRFComponent
from .errors import Errors
from .ml import CRFBatch, torch_network
from .optional import require_torch
from .targets import EntityTarget, gold_ids
from .threads import torch_threads

# what a fit minimises: the gold labels' NLL, or the decoded entities' log loss
OBJECTIVES = ("tokens", "entities")
# probabilities are clipped to [EPS, 1 - EPS] in the entities' log loss
EPS = 1e-9


class GoldScores:
    """The CRF scores of annotated docs, computed once, with their gold labels:
    the NLL and the calibration of the predictions at any temperature,
    without running the network again.

    nlp (Language): the pipeline; the components before `name` annotate the
        docs first (e.g. the tok2vec a listener reads).
    name (str): the name of a spacy-crf component of nlp.
    examples (Iterable[Example]): the annotated docs (e.g. from a spaCy
        Corpus); their predicted docs are what the component reads.
    batch_size (int): docs per model call, taken in order of length.
    """

    def __init__(self, nlp: Language, name: str, examples: Iterable[Example], *, batch_size: int = 64) -> None:
        tagger = nlp.get_pipe(name)
        if not isinstance(tagger, CRFComponent):
            raise ValueError(Errors.E025.format(what=f"component '{name}'", reason="it is not a spacy-crf component"))
        require_torch("Calibrating a temperature")  # the NLL runs the torch code
        if torch_network(tagger.model) is None:
            raise ValueError(Errors.E009.format(name=name))
        self.tagger = tagger
        self.examples = list(examples)
        labels, target = tagger.tags, tagger.target
        upstream = nlp.pipe_names[: nlp.pipe_names.index(name)]
        docs = [eg.predicted for eg in self.examples]
        if upstream:
            with nlp.select_pipes(enable=upstream):
                docs = list(nlp.pipe(docs, batch_size=batch_size))
        # per doc, its gold values ("" unknown), label ids (-1 unknown, and
        # where the model lacks the label) and excluded label ids
        self.gold_values = [target.gold_values(eg) for eg in self.examples]
        self.gold: List[numpy.ndarray] = []
        self.excluded: List[numpy.ndarray] = []
        self.n_unknown_labels = 0
        for values in self.gold_values:
            ids, excluded, unknown = gold_ids(values, labels)
            self.gold.append(ids)
            self.excluded.append(excluded)
            self.n_unknown_labels += len(unknown)
        self.n_gold_tokens = int(sum(int((ids >= 0).sum()) for ids in self.gold))
        # (doc indices, first token of the part in its doc, the part's scores)
        self.parts: List[Tuple[List[int], int, CRFBatch]] = []
        order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
        with torch_threads(tagger.threads):
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                # cut as the component cuts them in prediction, at the model's own temperature
                scores = tagger._scores([docs[i] for i in chunk], temperature=1.0)
                for doc_ids, offset, batch in scores.parts():
                    # the NLL and its temperature search run the torch code
                    torch_batch = batch if isinstance(batch, CRFBatch) else batch.to_torch()
                    self.parts.append(([chunk[i] for i in doc_ids], offset, torch_batch))

    def nll(self, temperature: float) -> float:
        """The gold labels' negative log-likelihood at a temperature, summed
        over the docs (nats), as the training loss sums it: tokens without a
        gold label (and with a label the model does not have) are summed over.

        temperature (float): tau > 0.
        RETURNS (float): the NLL.
        """
        total = 0.0
        with torch_threads(self.tagger.threads):
            for doc_ids, offset, batch in self.parts:
                ends = [offset + n for n in batch.doc_lengths]
                gold = [self.gold[i][offset:end] for i, end in zip(doc_ids, ends)]
                excluded = [self.excluded[i][offset:end] for i, end in zip(doc_ids, ends)]
                total += batch.with_temperature(temperature).negative_log_likelihood(gold, excluded)
        return total

    def entity_log_loss(self, temperature: float) -> float:
        """The summed log loss of the decoded entities' posteriors at a
        temperature against whether each is exactly a gold entity (target
        "ents"; 0.0 when no entity is decoded).

        temperature (float): tau > 0.
        RETURNS (float): sum of -log p (right) or -log(1 - p) (wrong).
        """
        entities = self.report(temperature).entities
        if entities is None or not len(entities):
            return 0.0
        probs = numpy.clip(numpy.asarray(entities.probs, dtype="float64"), EPS, 1.0 - EPS)
        right = numpy.asarray(entities.right, dtype=bool)
        return float(-numpy.where(right, numpy.log(probs), numpy.log1p(-probs)).sum())

    def report(self, temperature: float) -> CalibrationReport:
        """The NLL per gold token and the calibration of the predictions at a
        temperature (the predictions themselves do not depend on it).

        temperature (float): tau > 0.
        RETURNS (CalibrationReport): the NLL, the token outcomes and, for
            target "ents", the entity outcomes (every entity of the decoded
            path, whatever ents_threshold says).
        """
        labels, target = self.tagger.tags, self.tagger.target
        entity_target = target if isinstance(target, EntityTarget) else None
        is_ents = entity_target is not None
        types, patterns = entity_target.span_patterns(labels) if entity_target is not None else ([], [])
        type_ids = {kind: i for i, kind in enumerate(types)}
        n_docs = len(self.examples)
        ids: List[List[numpy.ndarray]] = [[] for _ in range(n_docs)]
        probs: List[List[numpy.ndarray]] = [[] for _ in range(n_docs)]
        spans: List[List[Tuple[int, int, str, float]]] = [[] for _ in range(n_docs)]
        with torch_threads(self.tagger.threads):
            for doc_ids, offset, batch in self.parts:
                tempered = batch.with_temperature(temperature)
                part_ids, part_probs = tempered.decode_with_confidence()
                if entity_target is not None:
                    part_spans = [
                        [
                            (start, end, type_ids[kind])
                            for start, end, kind in entity_target.offsets([labels[i] for i in path.tolist()])
                        ]
                        for path in part_ids
                    ]
                    given = tempered.span_probabilities(patterns, part_spans)
                    for i, doc_spans, result in zip(doc_ids, part_spans, given):
                        spans[i].extend(
                            (start + offset, end + offset, types[kind], p)
                            for (start, end, kind), p in zip(doc_spans, result.given.tolist())
                        )
                for i, path, doc_probs in zip(doc_ids, part_ids, part_probs):
                    ids[i].append(path)
                    probs[i].append(doc_probs)
        tokens = []
        for doc_paths, doc_confidences, values in zip(ids, probs, self.gold_values):
            path = numpy.concatenate(doc_paths) if doc_paths else numpy.zeros((0,), dtype="int64")
            confidence = numpy.concatenate(doc_confidences) if doc_confidences else numpy.zeros((0,))
            tokens.append(token_outcomes(confidence.tolist(), [labels[i] for i in path.tolist()], values))
        entities = None
        if is_ents:
            entities = Outcomes.join(entity_outcomes(eg, doc_spans) for eg, doc_spans in zip(self.examples, spans))
        nll = self.nll(temperature) / max(self.n_gold_tokens, 1)
        return CalibrationReport(temperature, nll, Outcomes.join(tokens), entities)


@dataclass
class CalibrationResult:
    """What `calibrate` did.

    name (str): the component calibrated.
    before (CalibrationReport): at the temperature the pipeline had.
    after (CalibrationReport): at the fitted temperature.
    fit (TemperatureFit): the search.
    n_docs (int): annotated docs read.
    n_gold_tokens (int): tokens with a gold label the model has.
    n_unknown_labels (int): tokens whose gold label the model does not have
        (summed over in the NLL, wrong predictions in ECE and Brier).
    written (Optional[Path]): where the pipeline was saved, None if nowhere.
    objective (str): what the fit minimised, "tokens" or "entities".
    """

    name: str
    before: CalibrationReport
    after: CalibrationReport
    fit: TemperatureFit
    n_docs: int
    n_gold_tokens: int
    n_unknown_labels: int
    written: Optional[Path] = None
    objective: str = "tokens"

    def to_dict(self) -> Dict[str, Any]:
        """RETURNS (Dict[str, Any]): JSON-able numbers."""
        return {
            "component": self.name,
            "temperature": self.after.temperature,
            "objective": self.objective,
            "before": self.before.metrics(),
            "after": self.after.metrics(),
            "at_edge": self.fit.at_edge,
            "docs": self.n_docs,
            "gold_tokens": self.n_gold_tokens,
            "unknown_labels": self.n_unknown_labels,
            "written": None if self.written is None else str(self.written),
        }


def crf_component_name(nlp: Language, component: Optional[str] = None) -> str:
    """The spacy-crf component to calibrate: `component`, or the pipeline's
    only one (ValueError E025 if it has none or several)."""
    names = [name for name, proc in nlp.pipeline if isinstance(proc, CRFComponent)]
    if component is not None:
        if component not in names:
            raise ValueError(
                Errors.E025.format(
                    what=f"component '{component}'", reason=f"the pipeline's spacy-crf components are {names}"
                )
            )
        return component
    if len(names) != 1:
        raise ValueError(
            Errors.E025.format(
                what="the pipeline", reason=f"it has {len(names)} spacy-crf components {names}: name one (--component)"
            )
        )
    return names[0]


def calibrate(
    model: Union[str, Path],
    dev_path: Union[str, Path],
    *,
    output: Optional[Union[str, Path]] = None,
    gold_preproc: bool = False,
    component: Optional[str] = None,
    batch_size: int = 64,
    write: bool = True,
    nlp: Optional[Language] = None,
    objective: str = "tokens",
) -> CalibrationResult:
    """Fit the temperature of a pipeline's spacy-crf component on annotated docs and
    save it in the component's cfg.

    model (Union[str, Path]): the pipeline, a folder or an installed package.
    dev_path (Union[str, Path]): the annotated docs, a .spacy file (or a
        folder of them), read as `spacy evaluate` reads them.
    output (Optional[Union[str, Path]]): save the calibrated pipeline here;
        None rewrites the component's cfg in the folder `model`.
    gold_preproc (bool): read the docs on their gold tokens, one sentence
        per doc (as `spacy evaluate --gold-preproc`).
    component (Optional[str]): the component's name; None for the
        pipeline's only spacy-crf component.
    batch_size (int): docs per model call.
    write (bool): False fits and reports without saving anything.
    nlp (Optional[Language]): the pipeline already loaded from `model`.
    objective (str): "tokens" (the gold labels' NLL) or "entities" (target
        "ents": the decoded entities' log loss).
    RETURNS (CalibrationResult): the temperatures, the metrics before and
        after, and where the pipeline was saved.
    """
    import spacy

    if nlp is None:
        nlp = spacy.load(model)
    name = crf_component_name(nlp, component)
    tagger = cast(CRFComponent, nlp.get_pipe(name))
    if objective not in OBJECTIVES:
        raise ValueError(
            Errors.E025.format(
                what=f"component '{name}'",
                reason=f"the objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}",
            )
        )
    if objective == "entities" and not isinstance(tagger.target, EntityTarget):
        raise ValueError(
            Errors.E025.format(
                what=f"component '{name}'",
                reason="objective 'entities' needs a crf_ner",
            )
        )
    cfg_file = Path(model) / name / "cfg"
    if write and output is None and not ((Path(model) / "config.cfg").is_file() and cfg_file.is_file()):
        raise ValueError(
            Errors.E025.format(
                what=f"component '{name}'",
                reason=f"'{model}' is not a pipeline folder with a saved "
                f"'{name}' to update in place: pass --output to save the calibrated pipeline elsewhere",
            )
        )
    if write and output is not None and Path(model).is_dir():
        target, folder = Path(output).resolve(), Path(model).resolve()
        if target != folder and target.is_relative_to(folder):
            raise ValueError(
                Errors.E025.format(
                    what=f"component '{name}'",
                    reason=f"the output '{output}' is inside the pipeline folder '{model}', where a whole "
                    "pipeline would be saved among its files: pass a folder apart from it, or no --output "
                    "to update the pipeline in place",
                )
            )
    examples = list(Corpus(dev_path, gold_preproc=gold_preproc)(nlp))
    scores = GoldScores(nlp, name, examples, batch_size=batch_size)
    if not scores.n_gold_tokens:
        raise ValueError(
            Errors.E025.format(
                what=f"component '{name}'",
                reason=f"the docs in '{dev_path}' have no gold label "
                f"of its target '{tagger.cfg['target']}' among its labels",
            )
        )
    previous = tagger.temperature
    loss = scores.nll if objective == "tokens" else scores.entity_log_loss
    fit = fit_temperature(loss, candidates=sorted({1.0, previous}))
    before, after = scores.report(previous), scores.report(fit.temperature)
    written = None
    if write:
        tagger.temperature = fit.temperature
        if output is not None:
            written = Path(output)
            nlp.to_disk(written)
        else:
            tagger.to_disk(cfg_file.parent, exclude=["vocab"])  # its cfg and weights, with their checksum
            written = Path(model)
    return CalibrationResult(
        name, before, after, fit, len(examples), scores.n_gold_tokens, scores.n_unknown_labels, written, objective
    )
