"""The distillation comparison: a transformer CRF teacher, the CPU student
trained on gold (plain) and the same student distilled from the teacher.

    python -m benchmarks.distillation plain configs/cpu.cfg --task tag --seed 0 [--corpus corpus/full]
    python -m benchmarks.distillation distilled configs/cpu.cfg --task tag --seed 0 --teacher MODEL
    python -m benchmarks.distillation speed --task tag --teacher T --plain P --distilled D [--rounds 5]
    python -m benchmarks.distillation probabilities --head distilled --seed 0 --work DIR
    python -m benchmarks.distillation report

Records go to benchmarks/runs/distillation/TASK_HEAD_sSEED.json (TASK: tag,
UD English EWT XPOS, or ner, Universal NER English EWT; HEAD: crf for the
teacher, which `benchmarks/converged_full.sh` trains under the converged
protocol and records there, plain or distilled). Both students train the
config as shipped (its own step budget and schedule), select their model on
dev half a and are scored on dev half b, with per-doc counts for the paired
bootstrap, as in the converged comparison. The distilled student is
`python -m spacy_crf distill TEACHER CONFIG` on the same train docs
(the teacher's posteriors, no gold) with the same budget. `speed` times
`nlp.pipe` words/s of the teacher and one plain and one distilled student
side by side (in turn, one thread, medians of the rounds) on dev half b
(runs/distillation/speed/TASK.json). `probabilities` measures a crf_ner's
entity probabilities (ECE, Brier) as trained and with its entity temperature,
each dev half by the copy calibrated on the other
(`benchmarks.converged_probabilities`;
runs/distillation/probabilities/ner_HEAD_sSEED_OBJECTIVE.json): does the
student inherit the teacher's calibration?
`report` prints the table (docs/benchmarks.md, "Distillation").

The goal (issue: transformer accuracy at CPU speed): the distilled student
closes at least half of the gap between the plain student and the teacher,
at no less than 0.95x the plain student's words/s.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.common import environment
from benchmarks.converged import score_on
from benchmarks.converged_report import load_runs, pooled_bootstrap

RUNS = Path(__file__).parent / "runs" / "distillation"
# TASK: the train file and the dev halves (in --corpus), the score
DATA = {
    "tag": ("en_ewt-ud-train.spacy", "ewt-dev-a.spacy", "ewt-dev-b.spacy", "tag_acc"),
    "ner": ("uner-train.spacy", "uner-dev-a.spacy", "uner-dev-b.spacy", "ents_f"),
}
TITLES = {
    "tag": "XPOS tags, UD English EWT (all train docs)",
    "ner": "entities, Universal NER English EWT (all train docs)",
}
HEADS = {
    "crf": "teacher: all-MiniLM-L6-v2 + CRF",
    "plain": "student, trained on gold",
    "distilled": "student, distilled",
}


def _train_command(args: argparse.Namespace, train: Path, dev: Path) -> List[str]:
    if args.command == "plain":
        command = [sys.executable, "-m", "scripts.train", str(args.config), "--output", str(args.work)]
        command += ["--resumable", "--paths.train", str(train)]  # the same command again resumes a stopped run
    else:
        command = [sys.executable, "-m", "spacy_crf", "distill", str(args.teacher), str(args.config)]
        command += ["--output", str(args.work), "--paths.train", str(train)]
    return command + ["--paths.dev", str(dev), "--system.seed", str(args.seed), "--gpu-id", str(args.gpu_id)]


def train_and_score(args: argparse.Namespace) -> Dict[str, Any]:
    """Train one student, score its model-best on dev half b, record it."""
    train_name, select, held_out, _ = DATA[args.task]
    command = _train_command(args, args.corpus / train_name, args.corpus / select)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    start = time.perf_counter()
    done = subprocess.run(command, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"training failed ({done.returncode}): nothing recorded")
    record = {
        "config": str(args.config),
        "head": args.command,
        "teacher": str(args.teacher) if args.command == "distilled" else None,
        "train": str(args.corpus / train_name),
        "dev_select": str(args.corpus / select),
        "dev_score": str(args.corpus / held_out),
        "seed": args.seed,
        "score": score_on(args.work / "model-best", args.corpus / held_out, args.gpu_id),
        "wall_seconds": round(wall, 1),
        "threads": args.threads,
        "environment": environment(),
    }
    path = args.runs / f"{args.task}_{args.command}_s{args.seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return record


def speed(args: argparse.Namespace) -> Dict[str, Any]:
    """nlp.pipe words/s of the teacher and the students, in turn, one thread."""
    import spacy
    import torch

    from benchmarks.common import pipe_rates_in_turn, unannotated_docs

    torch.set_num_threads(1)
    models = {"crf": args.teacher, "plain": args.plain, "distilled": args.distilled}
    pipelines = {head: spacy.load(path) for head, path in models.items()}
    docs = unannotated_docs(pipelines["plain"], str(args.corpus / DATA[args.task][2]))
    rates = pipe_rates_in_turn(pipelines, docs, args.rounds)
    record = {
        "task": args.task,
        "models": {head: str(path) for head, path in models.items()},
        "words": sum(len(doc) for doc in docs),
        "rounds": args.rounds,
        "words_per_second": {head: statistics.median(values) for head, values in rates.items()},
        "rates": rates,
        "threads": 1,
        "environment": environment(),
    }
    path = args.runs / "speed" / f"{args.task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return record


def probabilities(args: argparse.Namespace) -> List[Path]:
    """A crf_ner's entity probabilities on both dev halves, as trained and
    with its entity temperature (benchmarks.converged_probabilities); the
    run's folder gets a run.json naming its dev halves if it has none."""
    from benchmarks import converged_probabilities

    _, select, held_out, _ = DATA["ner"]
    run_json = args.work / "run.json"
    if not run_json.exists():
        halves = {"dev_select": str(args.corpus / select), "dev_score": str(args.corpus / held_out)}
        run_json.write_text(json.dumps(halves, indent=2) + "\n")
    written = []
    for objective in PROBABILITY_OBJECTIVES:
        path = args.runs / "probabilities" / f"ner_{args.head}_s{args.seed}_{objective}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        given = [str(args.work), "--objective", objective, "--json", str(path)]
        if converged_probabilities.main(given) != 0:
            raise SystemExit(f"measuring {args.work} ({objective}) failed: nothing more recorded")
        written.append(path)
    return written


# as trained (the pipeline's own temperature), and with the entity temperature fitted on the other dev half
PROBABILITY_OBJECTIVES = ("none", "entities")


def probability_table(folder: Path = RUNS) -> Optional[str]:
    """ECE and Brier of the entity probabilities of each head, as trained and
    with the entity temperature: mean (range) over the seeds; None without
    records."""
    records: Dict[tuple, Dict[int, Dict[str, Any]]] = {}
    for path in sorted((folder / "probabilities").glob("ner_*_s*_*.json")):
        _, head, seed, objective = path.stem.split("_", 3)
        records.setdefault((head, objective), {})[int(seed[1:])] = json.loads(path.read_text())
    if not records:
        return None

    def cell(values: List[float]) -> str:
        mean = f"{statistics.mean(values):.3f}"
        return mean + (f" ({min(values):.3f}–{max(values):.3f})" if len(values) > 1 else "")

    rows = [
        "| system | seeds | ECE as trained | ECE, entity temperature | Brier as trained | Brier, entity temperature |",
        "|---|---|---|---|---|---|",
    ]
    for head, title in HEADS.items():
        trained, tempered = records.get((head, "none"), {}), records.get((head, "entities"), {})
        if not trained and not tempered:
            continue
        seeds = ", ".join(str(s) for s in sorted(set(trained) | set(tempered)))
        cells = [
            cell([r["entities"][figure] for r in group.values()]) if group else "–"
            for figure in ("ece", "brier")
            for group in (trained, tempered)
        ]
        rows.append(f"| {title} | {seeds} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def summary(folder: Path = RUNS) -> Optional[str]:
    """The README's lines: only tasks with the teacher, three seeds of each
    student and the speeds ("" where none has them); None without records."""
    runs = load_runs(folder) if folder.exists() else {}
    if not runs:
        return None
    rows = []
    for task, (_, _, _, score) in DATA.items():
        heads = {head: runs.get((task, head), {}) for head in HEADS}
        speeds = _speeds(folder, task)
        if not heads["crf"] or len(heads["plain"]) < 3 or len(heads["distilled"]) < 3 or not speeds:
            continue
        means = {head: 100 * _mean(records, score) for head, records in heads.items()}
        rates = speeds["words_per_second"]
        closed = gap_closed(means["crf"], means["plain"], means["distilled"])
        rows.append(
            f"| {TITLES[task]} | {means['crf']:.2f} | {means['plain']:.2f} | {means['distilled']:.2f} "
            f"| {'–' if closed is None else f'{100 * closed:.0f}%'} | {rates['distilled'] / rates['plain']:.2f}x |"
        )
    if not rows:
        return ""
    head = (
        "A CPU student distilled from a transformer CRF teacher (all-MiniLM-L6-v2) through its exact "
        "posteriors of the train docs, beside the same config trained on their gold tags: dev score on a "
        "held-out half (the students: mean of 3 seeds); words/s of `nlp.pipe` on one thread "
        "([distillation](docs/distillation.md)):\n\n"
        "| task, data | teacher | student on gold | student distilled | gap closed | distilled words/s vs gold |\n"
        "|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(rows)


def _speeds(folder: Path, task: str) -> Optional[Dict[str, Any]]:
    path = folder / "speed" / f"{task}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _mean(records: Dict[int, Dict[str, Any]], score: str) -> Optional[float]:
    values = [r["score"][score] for r in records.values() if score in r["score"]]
    return statistics.mean(values) if values else None


def gap_closed(teacher: float, plain: float, distilled: float) -> Optional[float]:
    """The share of the plain student's distance to the teacher that
    distillation closes (1: the teacher's score; 0: no better than plain)."""
    if teacher == plain:
        return None
    return (distilled - plain) / (teacher - plain)


def table(folder: Path = RUNS) -> str:
    """The distillation table, a row per task and head ("not yet" where a
    head has no record)."""
    runs = load_runs(folder) if folder.exists() else {}
    rows = [
        "| task | system | seeds | dev score (held-out half) | words/s, 1 thread | vs plain |",
        "|---|---|---|---|---|---|",
    ]
    notes = []
    for task, (_, _, _, score) in DATA.items():
        heads = {head: runs.get((task, head), {}) for head in HEADS}
        speeds = _speeds(folder, task)
        means = {head: _mean(records, score) for head, records in heads.items()}
        for head, records in heads.items():
            if not records:
                rows.append(f"| {TITLES[task]} | {HEADS[head]} | – | not yet | – | – |")
                continue
            values = [100 * r["score"][score] for r in records.values()]
            cell = f"{statistics.mean(values):.2f}" + (
                f" ({min(values):.2f}–{max(values):.2f})" if len(values) > 1 else ""
            )
            rate = speeds["words_per_second"].get(head) if speeds else None
            plain_rate = speeds["words_per_second"].get("plain") if speeds else None
            ratio = f"{rate / plain_rate:.2f}x" if rate and plain_rate else "–"
            rate_cell = f"{rate:,.0f}" if rate else "–"
            seeds = ", ".join(str(s) for s in sorted(records))
            rows.append(f"| {TITLES[task]} | {HEADS[head]} | {seeds} | {cell} | {rate_cell} | {ratio} |")
        teacher, plain, distilled = means["crf"], means["plain"], means["distilled"]
        if teacher is not None and plain is not None and distilled is not None:
            closed = gap_closed(teacher, plain, distilled)
            if closed is not None:
                notes.append(
                    f"{task}: the distilled student closes {100 * closed:.0f}% of the gap (goal: at least 50%)."
                )
        paired_seeds = sorted(set(heads["plain"]) & set(heads["distilled"]))
        test = pooled_bootstrap(
            [heads["distilled"][s] for s in paired_seeds], [heads["plain"][s] for s in paired_seeds]
        )
        if test:
            notes.append(
                f"{task}: distilled minus plain, paired bootstrap over the {test['docs']} held-out docs, "
                f"seeds {', '.join(map(str, paired_seeds))} pooled: {100 * test['difference']:+.2f} "
                f"(95% interval {100 * test['low']:+.2f} to {100 * test['high']:+.2f}, p = {test['p']:.3g})."
            )
    return "\n".join(rows + ([""] + notes if notes else []))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("plain", "distilled"):
        run = commands.add_parser(name)
        run.add_argument("config", type=Path)
        run.add_argument("--task", choices=sorted(DATA), required=True)
        run.add_argument("--seed", type=int, default=0)
        run.add_argument(
            "--work", type=Path, help="the trained pipelines (default training/distillation/TASK_HEAD_sSEED)"
        )
        run.add_argument("--threads", type=int, default=2)
        run.add_argument("--gpu-id", type=int, default=-1)
        if name == "distilled":
            run.add_argument("--teacher", type=Path, required=True, help="the teacher pipeline (its model-best)")
    timing = commands.add_parser("speed")
    timing.add_argument("--task", choices=sorted(DATA), required=True)
    timing.add_argument("--teacher", type=Path, required=True)
    timing.add_argument("--plain", type=Path, required=True)
    timing.add_argument("--distilled", type=Path, required=True)
    timing.add_argument("--rounds", type=int, default=5)
    measure = commands.add_parser("probabilities")
    measure.add_argument("--head", choices=sorted(HEADS), required=True)
    measure.add_argument("--seed", type=int, default=0)
    measure.add_argument("--work", type=Path, required=True, help="the crf_ner run's folder (its model-best)")
    commands.add_parser("report")
    for sub in commands.choices.values():
        sub.add_argument("--corpus", type=Path, default=Path("corpus/full"))
        sub.add_argument("--runs", type=Path, default=RUNS)
    args = parser.parse_args(argv)
    if args.command in ("plain", "distilled"):
        args.teacher = getattr(args, "teacher", None)
        args.work = args.work or Path("training/distillation") / f"{args.task}_{args.command}_s{args.seed}"
        record = train_and_score(args)
        print(json.dumps({"score": {k: v for k, v in record["score"].items() if k != "per_doc"}}))
    elif args.command == "speed":
        print(json.dumps(speed(args)["words_per_second"]))
    elif args.command == "probabilities":
        print("\n".join(str(path) for path in probabilities(args)))
    else:
        print(table(args.runs) + "\n\n" + (probability_table(args.runs) or ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
