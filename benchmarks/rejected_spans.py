"""Does learning from rejected spans pay? An experiment on an entity corpus.

    python -m benchmarks.rejected_spans corpus/uner-train.spacy corpus/uner-dev.spacy \\
        [--config configs/ner.cfg] [--annotated 0.2] [--weak-steps 1000] [--steps 2000] \\
        [--arms annotated rejected accepted accepted+rejected] [--start scratch|weak] [--seeds 0 1 2] \\
        [--workdir training/rejected_spans] [--output metrics/ner/rejected_spans.json]

The setting: an annotator has labelled a share (`--annotated`) of the training
docs fully. A weak model trained on them proposes entities on the rest, and the
annotator answers each proposal with accept (it is a gold entity) or reject
(it is not), as in binary annotation tools; nothing else in those docs is
known. Then models train on all the docs, the same config, steps and seed,
one per arm, the arms differing only in what the other docs carry:

- `annotated`: nothing (every label unknown: they add nothing to the loss);
- `rejected`: their rejected spans only, in doc.spans["incorrect_spans"]
  (crf_ner's `incorrect_spans_key` leaves every path containing one out of
  the gold sum);
- `accepted`: their accepted spans only, as entities with every other token's
  label unknown;
- `accepted+rejected`: both, i.e. all of the annotator's answers.

With `--start scratch` every arm trains a new model; with `--start weak` every
arm goes on training the weak model (the loop of binary annotation tools: the
model that proposed is updated with the answers), for `--steps` more steps.

Every arm trains once per seed (`--seeds`, spaCy's `system.seed`: the order of
the batches and the dropout), and each model is scored on the dev corpus
(`spacy evaluate`, ents_f/p/r), its `model-best` (the checkpoint `spacy train`
kept for its dev score) and its `model-last`. What the rejections buy is
`accepted+rejected` - `accepted` (the answers with and without the rejections)
and `rejected` - `annotated` (rejections as the only answers), seed by seed and
on average. The JSON holds the setup (docs, the weak model's dev F1, accepted and
rejected spans), every run's scores, the arms' means and the gains.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple

import spacy
from spacy.cli.evaluate import evaluate as spacy_evaluate
from spacy.tokens import Doc, DocBin, Span

from .common import print_and_write

KEY = "incorrect_spans"
ARMS = ("annotated", "rejected", "accepted", "accepted+rejected")
GAINS = {"rejections_beside_accepts": ("accepted+rejected", "accepted"), "rejections_alone": ("rejected", "annotated")}


def train(config: str, train_path: Path, dev: str, output: Path, steps: int, overrides: List[str]) -> None:
    """Run `spacy train` for `steps` steps (the config's learning rate schedule)."""
    command = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        config,
        "--output",
        str(output),
        "--paths.train",
        str(train_path),
        "--paths.dev",
        dev,
        "--training.max_steps",
        str(steps),
        *overrides,
    ]
    subprocess.run(command, check=True)


def evaluate(model: Path, dev: str) -> Dict[str, float]:
    """ents_f, ents_p and ents_r of a pipeline on the dev corpus: `spacy
    evaluate`'s own function, in this process (no start-up per model)."""
    out = model.parent / f"dev_scores_{model.name}.json"
    scores = spacy_evaluate(str(model), Path(dev), output=out)
    return {key: round(100 * scores[key], 2) for key in ("ents_f", "ents_p", "ents_r")}


def entity_component(config) -> str:
    """The name of the config's entity recognizer: its one crf_ner (or a 0.x
    config's crf_tagger)."""
    names = [
        name
        for name, component in config["components"].items()
        if component.get("factory") in ("crf_ner", "crf_tagger")
    ]
    if len(names) != 1:
        raise SystemExit(f"the config needs one crf_ner component, it has {names}")
    return names[0]


def continued_config(config: str, weak_model: Path, workdir: Path) -> Path:
    """A copy of the config whose crf_ner is the weak model's, sourced (so
    that `spacy train` resumes it instead of starting anew), with
    incorrect_spans_key set to KEY in the config of the copy of the weak model
    it sources."""
    source = workdir / "weak-source"
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(weak_model, source)
    weak_config = spacy.util.load_config(source / "config.cfg")
    weak_config["components"][entity_component(weak_config)]["incorrect_spans_key"] = KEY
    weak_config.to_disk(source / "config.cfg")
    cfg = spacy.util.load_config(config)
    cfg["components"][entity_component(cfg)] = {"source": str(source.resolve())}
    path = workdir / "continued.cfg"
    cfg.to_disk(path)
    return path


def bare(doc: Doc) -> Doc:
    """The doc's words, without any annotation (every entity label unknown)."""
    return Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])


def answers(nlp, docs: List[Doc]) -> List[Tuple[List[Span], List[Span]]]:
    """The annotator's answers to the weak model's proposals on each doc:
    (accepted, rejected) spans of the gold doc."""
    result = []
    for gold, predicted in zip(docs, nlp.pipe(bare(doc) for doc in docs)):
        gold_spans = {(e.start, e.end, e.label_) for e in gold.ents}
        proposals = [Span(gold, e.start, e.end, label=e.label_) for e in predicted.ents]
        accepted = [s for s in proposals if (s.start, s.end, s.label_) in gold_spans]
        rejected = [s for s in proposals if (s.start, s.end, s.label_) not in gold_spans]
        result.append((accepted, rejected))
    return result


def with_answers(gold: Doc, accepted: List[Span], rejected: List[Span]) -> Doc:
    """A bare copy of the doc carrying the given answers: the accepted spans
    as entities (every other token's label unknown), the rejected ones in
    doc.spans[KEY]."""
    doc = bare(gold)
    doc.set_ents([Span(doc, s.start, s.end, label=s.label_) for s in accepted], default="missing")
    doc.spans[KEY] = [Span(doc, s.start, s.end, label=s.label_) for s in rejected]
    return doc


def mean_scores(scores: Iterable[Dict[str, float]]) -> Dict[str, float]:
    """The mean of each score over runs (seeds)."""
    scores = list(scores)
    return {key: round(sum(s[key] for s in scores) / len(scores), 2) for key in scores[0]}


def gains(runs: Dict[str, List[Dict]], which: str) -> Dict[str, Dict[str, Any]]:
    """Per gain of GAINS whose arms ran: the ents_f differences seed by seed
    ("per_seed") and their mean ("mean"), of the `which` ("best" or "last") models."""
    result = {}
    for name, (a, b) in GAINS.items():
        if a in runs and b in runs:
            diffs = [round(x[which]["ents_f"] - y[which]["ents_f"], 2) for x, y in zip(runs[a], runs[b])]
            result[name] = {"mean": round(sum(diffs) / len(diffs), 2), "per_seed": diffs}
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--config", default="configs/ner.cfg")
    parser.add_argument("--annotated", type=float, default=0.2, help="share of the train docs annotated fully")
    parser.add_argument("--weak-steps", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="train every arm once per seed")
    parser.add_argument(
        "--start",
        choices=("scratch", "weak"),
        default="scratch",
        help="train every arm from scratch, or go on training the weak model",
    )
    parser.add_argument("--workdir", type=Path, default=Path("training/rejected_spans"))
    parser.add_argument("--output", type=Path, default=Path("metrics/ner/rejected_spans.json"))
    args = parser.parse_args(argv)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(args.train).get_docs(nlp.vocab))
    n_annotated = max(1, int(len(docs) * args.annotated))
    annotated, rest = docs[:n_annotated], docs[n_annotated:]
    args.workdir.mkdir(parents=True, exist_ok=True)
    annotated_path = args.workdir / "annotated.spacy"
    DocBin(docs=annotated, store_user_data=True).to_disk(annotated_path)
    weak_dir = args.workdir / "weak"
    train(args.config, annotated_path, args.dev, weak_dir, args.weak_steps, [])
    weak = spacy.load(weak_dir / "model-best")
    weak_scores = evaluate(weak_dir / "model-best", args.dev)
    replies = answers(weak, rest)
    carried = {
        "annotated": lambda doc, acc, rej: with_answers(doc, [], []),
        "rejected": lambda doc, acc, rej: with_answers(doc, [], rej),
        "accepted": lambda doc, acc, rej: with_answers(doc, acc, []),
        "accepted+rejected": with_answers,
    }
    name = entity_component(spacy.util.load_config(args.config))
    config, overrides = args.config, [f"--components.{name}.incorrect_spans_key", KEY]
    if args.start == "weak":
        config, overrides = str(continued_config(args.config, weak_dir / "model-best", args.workdir)), []
    runs: Dict[str, List[Dict]] = {}
    for arm in args.arms:
        path = args.workdir / f"{arm}.spacy"
        others = [carried[arm](doc, acc, rej) for doc, (acc, rej) in zip(rest, replies)]
        DocBin(docs=annotated + others, store_user_data=True).to_disk(path)
        runs[arm] = []
        for seed in args.seeds:
            output = args.workdir / arm / f"seed{seed}"
            train(config, path, args.dev, output, args.steps, [*overrides, "--system.seed", str(seed)])
            runs[arm].append(
                {
                    "seed": seed,
                    "best": evaluate(output / "model-best", args.dev),
                    "last": evaluate(output / "model-last", args.dev),
                }
            )
    record = {
        "config": args.config,
        "train_docs": len(docs),
        "annotated_docs": len(annotated),
        "answered_docs": len(rest),
        "accepted_spans": sum(len(acc) for acc, _ in replies),
        "rejected_spans": sum(len(rej) for _, rej in replies),
        "gold_entities_in_answered_docs": sum(len(doc.ents) for doc in rest),
        "weak_steps": args.weak_steps,
        "weak_model": weak_scores,
        "start": args.start,
        "steps": args.steps,
        "seeds": list(args.seeds),
        "arms": {arm: mean_scores(r["best"] for r in arm_runs) for arm, arm_runs in runs.items()},
        "arms_last": {arm: mean_scores(r["last"] for r in arm_runs) for arm, arm_runs in runs.items()},
        "runs": runs,
        "ents_f_gain": gains(runs, "best"),
        "ents_f_gain_last": gains(runs, "last"),
    }
    print_and_write(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
