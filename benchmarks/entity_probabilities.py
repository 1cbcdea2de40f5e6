"""Entity probabilities of a recogniser on annotated docs: their calibration, and precision/recall over a threshold.

    python -m benchmarks.entity_probabilities MODEL DEV.spacy [--gold-preproc] [--component NAME] \
        --json metrics/calibration/entities_NAME.json [--plot metrics/calibration/pr_NAME.png] \
        [--thresholds 0 0.05 ... 0.99] [--bins 15] [--and MODEL2 DEV2 ...]

One script for both systems, so that their figures are computed the same way:

- crf_ner: an entity's probability is its exact
  posterior, span._.crf_prob (store_entity_probs is switched on and
  threshold off for the run), at the temperature stored in the pipeline
  (`python -m spacy_crf calibrate` fits it): every entity of the decoded path.
- spaCy's beam_ner (any spaCy EntityRecognizer with beam_width >= 2): an
  entity's probability is spaCy's beam score, the summed probability of the
  beam's final parses that contain it (`EntityRecognizer.scored_ents` of the
  beams that `predict` returns, i.e. `beam_parse` at the component's
  beam_width and beam_density); the entities are doc.ents as beam_ner sets
  them, those of the beam's best parse.

The annotated docs are read as `spacy evaluate` and benchmarks.reliability read
them (`--gold-preproc`: on their gold tokens, one sentence per doc). A
predicted entity is right when exactly that span and label is gold, judged
as spaCy's NER scorer judges it (`spacy_crf.calibration.entity_outcomes`);
from those outcomes come the ECE (15 equal-width bins), the Brier score and
the precision of the entities at least 0.5 and 0.9 probable, computed as
benchmarks.reliability computes its "entities" figures (`benchmarks.reliability.curve`).

The curve over a threshold t is what `threshold = t` would give
crf_ner: the entities kept are the predicted ones with probability >= t,
and precision and recall are against every gold entity (exact span and
label; the same counts as spaCy's ents_p and ents_r at t = 0). `--json`
writes everything with the run's environment, `--plot` draws precision,
recall and F1 against t (needs matplotlib); a summary is printed.

`--and MODEL2 DEV2` (repeatable) pools further pairs into the same figures:
cross-fitting, e.g. the model calibrated on the first half of dev measured
on the second, and the one calibrated on the second measured on the first,
so that every dev entity is measured by a model whose temperature never saw
it, on twice as many entities as one half gives.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.training import Example

from spacy_crf.calibration import N_BINS, Outcomes, entity_outcomes
from spacy_crf.errors import ErrorsWithCodes

from .reliability import curve

# t = 0, 0.05, ..., 0.95 and 0.99
THRESHOLDS = [round(0.05 * i, 2) for i in range(20)] + [0.99]

# a predicted entity: (start, end exclusive, label, probability), in the predicted doc's tokens
Entity = Tuple[int, int, str, float]


class EntityProbabilityErrors(metaclass=ErrorsWithCodes):
    """Coded errors of benchmarks.entity_probabilities (E301 upwards: spacy_crf's
    own are E001 upwards, corpus tagging's E101 upwards, the peer benchmarks' E201 upwards)."""

    E301 = (
        "The pipeline has no entity recogniser to read probabilities from: {reason}. "
        "Pass a pipeline with a crf_ner or spaCy's beam_ner."
    )
    E302 = (
        "Component '{name}' is a {factory} with target \"{target}\": its probabilities "
        "are not entity posteriors. Pass a crf_ner (e.g. configs/ner.cfg)."
    )
    E303 = (
        "Component '{name}' is spaCy's greedy ner (beam_width = {width}): it has no beam "
        "to score its entities with. Train spaCy's beam_ner instead (configs/ner_beam.cfg)."
    )
    E304 = "A threshold must be in [0, 1], got {value}."
    E305 = (
        "Component '{name}' wrote the entity '{text}' ({start}, {end}, {label}) without a "
        "probability: the docs were annotated before it ran."
    )
    E306 = "benchmarks.entity_probabilities draws with matplotlib, which is not installed: pip install matplotlib"
    E307 = (
        "The pooled pipelines (--and) are of different systems, {systems}: pool only "
        "crf_ner pipelines or only beam_ner ones."
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="pipeline folder or package")
    parser.add_argument("dev", help="annotated docs: a .spacy file or a folder of them")
    parser.add_argument("--json", required=True, help="write the calibration and the curve here")
    parser.add_argument("--plot", default=None, help="draw precision and recall against t here (.png, .svg, .pdf)")
    parser.add_argument(
        "--gold-preproc",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="read the docs on their gold tokens, one sentence per doc",
    )
    parser.add_argument(
        "--component", default=None, help="the entity recogniser (default: the pipeline's only crf_ner or spaCy ner)"
    )
    parser.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=THRESHOLDS,
        help="the probabilities t of the curve (default 0, 0.05, ..., 0.95, 0.99)",
    )
    parser.add_argument("--bins", type=int, default=N_BINS, help="equal-width bins of probability for the ECE")
    parser.add_argument("--batch-size", type=int, default=64, help="docs per model call")
    parser.add_argument(
        "--and",
        dest="more",
        nargs=2,
        action="append",
        default=[],
        metavar=("MODEL", "DEV"),
        help="pool a further pipeline and its docs into the same figures (repeatable)",
    )
    return parser


def _system(nlp: Language, name: str) -> Optional[str]:
    """ "crf_ner", "crf" (a crf_tagger or crf_morphologizer: no entities),
    "ner" (spaCy's greedy or beam EntityRecognizer) or None for another
    component."""
    from spacy.pipeline import EntityRecognizer

    from spacy_crf.components import CRFComponent, CRFEntityRecognizer

    proc = nlp.get_pipe(name)
    if isinstance(proc, CRFEntityRecognizer):
        return "crf_ner"
    if isinstance(proc, CRFComponent):
        return "crf"
    if isinstance(proc, EntityRecognizer):
        return "ner"
    return None


def entity_component(nlp: Language, component: Optional[str] = None) -> Tuple[str, str]:
    """The component whose entity probabilities are read: `component`, or the
    pipeline's only crf_ner or spaCy EntityRecognizer.

    nlp (Language): the pipeline.
    component (Optional[str]): the component's name, or None.
    RETURNS (Tuple[str, str]): its name and system, "crf_ner" or "beam_ner";
        ValueError E301 (none, or several), E302 (a crf_tagger or
        crf_morphologizer) or E303 (a greedy ner).
    """
    if component is not None:
        if component not in nlp.pipe_names:
            raise ValueError(
                EntityProbabilityErrors.E301.format(
                    reason=f"it has no component '{component}' (its components are {nlp.pipe_names})"
                )
            )
        names = [component]
    else:
        names = [name for name in nlp.pipe_names if _system(nlp, name) is not None]
        taggers = [name for name in names if _system(nlp, name) == "crf"]
        entity_names = [name for name in names if name not in taggers]
        if not entity_names and taggers:
            names = taggers[:1]  # a crf_tagger or crf_morphologizer: E302 below
        elif not entity_names:
            raise ValueError(
                EntityProbabilityErrors.E301.format(
                    reason=f"none of its components {nlp.pipe_names} is a crf_ner or a spaCy ner"
                )
            )
        elif len(entity_names) > 1:
            raise ValueError(
                EntityProbabilityErrors.E301.format(
                    reason=f"it has {len(entity_names)} of them, {entity_names}: name one (--component)"
                )
            )
        else:
            names = entity_names
    (name,) = names
    system = _system(nlp, name)
    proc = nlp.get_pipe(name)
    if system is None:
        factory = nlp.get_pipe_meta(name).factory
        raise ValueError(
            EntityProbabilityErrors.E301.format(
                reason=f"component '{name}' is a {factory}, neither a crf_ner nor a spaCy ner"
            )
        )
    if system == "crf":
        factory = nlp.get_pipe_meta(name).factory
        raise ValueError(EntityProbabilityErrors.E302.format(name=name, factory=factory, target=proc.cfg["target"]))
    if system == "crf_ner":
        return name, "crf_ner"
    if proc.cfg.get("beam_width", 1) < 2:
        raise ValueError(EntityProbabilityErrors.E303.format(name=name, width=proc.cfg.get("beam_width", 1)))
    return name, "beam_ner"


def _annotate_upstream(nlp: Language, name: str, docs: List[Any], batch_size: int) -> None:
    """Run the components before `name` on the docs, in place."""
    upstream = nlp.pipe_names[: nlp.pipe_names.index(name)]
    if upstream:
        with nlp.select_pipes(enable=upstream):
            for _ in nlp.pipe(docs, batch_size=batch_size):
                pass


def crf_entities(nlp: Language, name: str, docs: List[Any], batch_size: int = 64) -> List[List[Entity]]:
    """Annotate the docs with a crf_ner and read each
    entity's posterior, span._.crf_prob, at the component's temperature.
    store_entity_probs is on and threshold 0 for the run (every entity
    of the decoded path), as they were after it.

    RETURNS (List[List[Entity]]): per doc, its entities and their probabilities.
    """
    tagger = nlp.get_pipe(name)
    saved = {key: tagger.cfg.get(key) for key in ("store_entity_probs", "threshold")}
    tagger.cfg.update(store_entity_probs=True, threshold=0.0)
    try:
        _annotate_upstream(nlp, name, docs, batch_size)
        for _ in tagger.pipe(docs, batch_size=batch_size):
            pass
    finally:
        tagger.cfg.update(saved)
    result = []
    for doc in docs:
        entities = []
        for ent in doc.ents:
            if ent._.crf_prob is None:
                raise ValueError(
                    EntityProbabilityErrors.E305.format(
                        name=name, text=ent.text, start=ent.start, end=ent.end, label=ent.label_
                    )
                )
            entities.append((ent.start, ent.end, ent.label_, float(ent._.crf_prob)))
        result.append(entities)
    return result


def beam_entities(nlp: Language, name: str, docs: List[Any], batch_size: int = 64) -> List[List[Entity]]:
    """Annotate the docs with spaCy's beam_ner as it annotates them (its
    `predict`, a `beam_parse` at its beam_width and beam_density, then
    `set_annotations`: doc.ents from the best parse), and give each entity
    spaCy's beam score, `scored_ents`: the summed probability of the final
    parses in the beam that contain it.

    RETURNS (List[List[Entity]]): per doc, its entities and their probabilities.
    """
    ner = nlp.get_pipe(name)
    _annotate_upstream(nlp, name, docs, batch_size)
    scores: Dict[int, Dict[Tuple[int, int, str], float]] = {}
    # an empty doc gets no beam (predict of only empty docs returns plain states)
    filled = [i for i, doc in enumerate(docs) if len(doc)]
    for start in range(0, len(filled), batch_size):
        ids = filled[start : start + batch_size]
        batch = [docs[i] for i in ids]
        beams = ner.predict(batch)
        ner.set_annotations(batch, beams)
        for i, doc_scores in zip(ids, ner.scored_ents(beams)):
            scores[i] = doc_scores
    result = []
    for i, doc in enumerate(docs):
        entities = []
        for ent in doc.ents:
            key = (ent.start, ent.end, ent.label_)
            if key not in scores.get(i, {}):
                raise ValueError(
                    EntityProbabilityErrors.E305.format(
                        name=name, text=ent.text, start=ent.start, end=ent.end, label=ent.label_
                    )
                )
            entities.append((*key, float(scores[i][key])))
        result.append(entities)
    return result


def entity_probabilities(
    nlp: Language, examples: Sequence[Example], name: str, system: str, batch_size: int = 64
) -> List[List[Entity]]:
    """Annotate the examples' predicted docs with the component (and those
    before it) and read their entities' probabilities.

    nlp (Language): the pipeline.
    examples (Sequence[Example]): the annotated docs; their predicted docs
        are annotated in place.
    name (str): the component, from `entity_component`.
    system (str): "crf_ner" or "beam_ner".
    batch_size (int): docs per model call.
    RETURNS (List[List[Entity]]): per example, its predicted entities.
    """
    docs = [eg.predicted for eg in examples]
    read = crf_entities if system == "crf_ner" else beam_entities
    return read(nlp, name, docs, batch_size)


def gold_entity_count(examples: Sequence[Example]) -> int:
    """The gold entities recall is measured against: those of every doc with
    entity annotation, as spaCy's NER scorer counts them."""
    return sum(len(eg.reference.ents) for eg in examples if eg.reference.has_annotation("ENT_IOB"))


def _ratio(a: int, b: int) -> Optional[float]:
    return a / b if b else None


def threshold_curve(outcomes: Outcomes, n_gold: int, thresholds: Sequence[float]) -> List[Dict[str, Any]]:
    """Precision, recall and F1 of the entities with probability >= t, per t.

    outcomes (Outcomes): the predicted entities that were judged, their
        probabilities and whether each was right.
    n_gold (int): the gold entities.
    thresholds (Sequence[float]): the values t, each in [0, 1].
    RETURNS (List[Dict[str, Any]]): per t, "threshold", "kept", "tp", "fp",
        "fn", "gold", "precision", "recall" and "f1" (None where undefined).
    """
    rows = []
    for t in thresholds:
        kept = outcomes.probs >= t
        tp = int(outcomes.right[kept].sum())
        n_kept = int(kept.sum())
        precision, recall = _ratio(tp, n_kept), _ratio(tp, n_gold)
        f1 = None
        if precision is not None and recall is not None:
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append(
            {
                "threshold": float(t),
                "kept": n_kept,
                "tp": tp,
                "fp": n_kept - tp,
                "fn": n_gold - tp,
                "gold": n_gold,
                "precision": precision,
                "recall": recall,
                "f1": f1,
            }
        )
    return rows


def temperatures(result: Dict[str, Any]) -> List[float]:
    """The temperatures of a result's crf_ner pipelines: its own, or each pooled pair's."""
    return [pair["temperature"] for pair in result.get("pairs", [result]) if pair.get("temperature") is not None]


def plot(result: Dict[str, Any], path: Path) -> None:
    """Draw precision, recall and F1 against the threshold t into an image file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["thresholds"]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for key, style in (("precision", "o-"), ("recall", "s-"), ("f1", "^--")):
        points = [(row["threshold"], row[key]) for row in rows if row[key] is not None]
        ax.plot([t for t, _ in points], [v for _, v in points], style, markersize=3, label=key)
    ents = result["entities"]
    ece = "-" if ents["ece"] is None else f"{ents['ece']:.3f}"
    temperature = "".join(f", tau = {tau:.3g}" for tau in temperatures(result))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("threshold t: entities kept have probability >= t")
    ax.set_ylabel("precision / recall (exact span and label)")
    ax.set_title(f"{result['system']}{temperature}: n = {ents['n']:,}, ECE {ece}", fontsize=10)
    ax.grid(True, linewidth=0.3)
    ax.legend(loc="lower left", fontsize=8)
    where = " + ".join(f"{pair['model']} on {Path(pair['dev']).name}" for pair in result.get("pairs", [result]))
    fig.suptitle(where, fontsize=9 if len(where) < 90 else 6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _fmt(value: Optional[float], digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_lines(result: Dict[str, Any]) -> List[str]:
    """The printed summary: ECE, Brier, P@0.9, and the curve."""
    ents = result["entities"]
    at = ents["precision_at"]
    temperature = "".join(f" tau={tau:.4g}" for tau in temperatures(result))
    lines = [
        f"{result['system']} ({result['component']}){temperature}: {ents['n']} entities, "
        f"{result['gold_entities']} gold; ECE {_fmt(ents['ece'])}, Brier {_fmt(ents['brier'])}, "
        f"P@0.5 {_fmt(at['0.5']['precision'])} (n={at['0.5']['n']}), "
        f"P@0.9 {_fmt(at['0.9']['precision'])} (n={at['0.9']['n']})",
        "     t    kept        P        R       F1",
    ]
    for row in result["thresholds"]:
        lines.append(
            f"{row['threshold']:6.2f} {row['kept']:7d} {_fmt(row['precision']):>8} "
            f"{_fmt(row['recall']):>8} {_fmt(row['f1']):>8}"
        )
    return lines


def measure(
    nlp: Language, model: str, dev: str, name: str, system: str, gold_preproc: bool, batch_size: int
) -> Dict[str, Any]:
    """One pipeline's entities on its annotated docs (its component `name` of
    `system`, from `entity_component`): "model", "dev", "component",
    "system", "temperature" (crf_ner) or "beam" (beam_ner),
    "predicted_entities", "gold_entities" and the judged "outcomes"."""
    from spacy.training import Corpus

    examples = list(Corpus(dev, gold_preproc=gold_preproc)(nlp))
    entities = entity_probabilities(nlp, examples, name, system, batch_size=batch_size)
    proc = nlp.get_pipe(name)
    pair: Dict[str, Any] = {"model": str(model), "dev": str(dev), "component": name, "system": system}
    if system == "crf_ner":
        pair["temperature"] = proc.temperature
    else:
        pair["beam"] = {key: proc.cfg[key] for key in ("beam_width", "beam_density")}
    pair["predicted_entities"] = sum(len(doc_entities) for doc_entities in entities)
    pair["gold_entities"] = gold_entity_count(examples)
    pair["outcomes"] = Outcomes.join(entity_outcomes(eg, doc_entities) for eg, doc_entities in zip(examples, entities))
    return pair


def _same_or_none(values: List[Any]) -> Any:
    """The value all pairs share, or None where they differ."""
    return values[0] if all(value == values[0] for value in values) else None


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    for t in args.thresholds:
        if not 0.0 <= t <= 1.0:
            raise ValueError(EntityProbabilityErrors.E304.format(value=t))
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(EntityProbabilityErrors.E306, file=sys.stderr)
            return 1
    import spacy

    import spacy_crf  # noqa: F401  (registers crf_ner)

    from .common import write_json

    given = [(args.model, args.dev), *args.more]
    pipelines = [spacy.load(model) for model, _ in given]
    # every pipeline's system before any is run: pooled figures mix no systems
    components = [entity_component(nlp, args.component) for nlp in pipelines]
    systems = sorted({system for _, system in components})
    if len(systems) > 1:
        raise ValueError(EntityProbabilityErrors.E307.format(systems=systems))
    pairs = [
        measure(nlp, model, dev, name, system, args.gold_preproc, args.batch_size)
        for nlp, (model, dev), (name, system) in zip(pipelines, given, components)
    ]
    outcomes = Outcomes.join(pair.pop("outcomes") for pair in pairs)
    n_gold = sum(pair["gold_entities"] for pair in pairs)
    first = pairs[0]
    pooled = len(pairs) > 1
    # pooled: the models and docs of every pair, in order ("pairs" has the rest)
    result: Dict[str, Any] = {
        "model": [pair["model"] for pair in pairs] if pooled else args.model,
        "dev": [pair["dev"] for pair in pairs] if pooled else args.dev,
        "component": first["component"],
        "system": first["system"],
    }
    # one temperature (or beam), or None where the pooled pipelines differ in it
    if first["system"] == "crf_ner":
        result["temperature"] = _same_or_none([pair["temperature"] for pair in pairs])
    else:
        result["beam"] = _same_or_none([pair["beam"] for pair in pairs])
    if pooled:
        result["pairs"] = pairs
    result.update(
        {
            "gold_preproc": args.gold_preproc,
            "bins": args.bins,
            "predicted_entities": sum(pair["predicted_entities"] for pair in pairs),
            "gold_entities": n_gold,
            "entities": curve(outcomes, args.bins),
            "thresholds": threshold_curve(outcomes, n_gold, sorted(args.thresholds)),
        }
    )
    write_json(result, Path(args.json))
    if args.plot:
        plot(result, Path(args.plot))
    print("\n".join(summary_lines(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
