"""Dev accuracy against wall time: what a user waits for is the score, not steps.

    python -m benchmarks.time_to_accuracy NAME=CONFIG[,SECTION.KEY=VALUE...] [...] \\
        --train corpus/en_ewt-ud-train.spacy --dev corpus/en_ewt-ud-dev.spacy \\
        [--score tag_acc] [--threads 1] [--output metrics/speed/time_to_accuracy.json] \\
        [--merge] [--plot metrics/speed/time_to_accuracy.png] [-- EXTRA spacy train ARGS]

Each config trains with `spacy train`, one at a time, in its own process with
`--threads` threads (OMP_NUM_THREADS and MKL_NUM_THREADS); every evaluation row
the console logger prints is stamped with the wall time since the process
started (start-up, initialization and the evaluations included: what a user
waits for). The JSON holds, per run, (seconds, step, score) at each evaluation,
the final and best scores and the total time; `--plot` draws score against
minutes for every run (matplotlib, the `plots` extra). `time_to(run, score)`
reads off when a run first reached a score. A run's config may carry its own
overrides after commas (`fast=configs/cpu.cfg,training.max_steps=4000`); with
`--merge` the runs already in `--output` that are not trained again are kept,
so runs made one command at a time share one JSON and one plot. `--peer
NAME=JSON` adds a run another script recorded with the same keys (e.g.
benchmarks.peers for Flair) to the JSON and the plot. `--baseline NAME` and
`--reference NAME` name the runs whose best dev scores (the reference's less
`--tolerance`) `table` times every run against.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .common import environment, parse_spec, write_json

# an evaluation row of spaCy's console logger: epoch, step, losses..., scores..., score
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+((?:[-\d.]+\s+)+)([-\d.]+)\s*$")


def header_columns(line: str) -> Optional[List[str]]:
    """The column names of the logger's header row ("E  #  LOSS ...  SCORE"), or None."""
    parts = line.split()
    if len(parts) < 3 or parts[:2] != ["E", "#"] or parts[-1] != "SCORE":
        return None
    columns: List[str] = []
    for part in parts:  # a loss column is headed by two words: "LOSS CRF_T..."
        if columns and columns[-1] == "LOSS":
            columns[-1] = f"LOSS {part}"
        else:
            columns.append(part)
    return columns


def parse_row(line: str, columns: Optional[List[str]], score: str) -> Optional[Dict[str, float]]:
    """(step, score) of an evaluation row; the score column named `score`
    (e.g. tag_acc -> TAG_ACC), else the weighted SCORE, in percent."""
    match = ROW.match(line)
    if not match:
        return None
    values = [float(v) for v in line.split()]
    value = values[-1] * 100
    if columns is not None and len(columns) == len(values):
        wanted = score.upper()
        if wanted in columns:
            value = values[columns.index(wanted)]
    return {"step": int(values[1]), "score": value}


def parse_run(spec: str) -> Tuple[str, str, List[str]]:
    """NAME=CONFIG[,SECTION.KEY=VALUE...] -> (name, config, spacy train override args)."""
    return parse_spec(spec, "CONFIG")


def run_training(config: str, train: str, dev: str, output: Path, threads: int, score: str, extra: List[str]) -> Dict:
    """Train one config, stamping each evaluation row with the wall time."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    command = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        config,
        "--output",
        str(output),
        "--paths.train",
        train,
        "--paths.dev",
        dev,
        *extra,
    ]
    start = time.perf_counter()
    points, columns = [], None
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as process:
        for line in process.stdout:
            columns = header_columns(line) or columns
            row = parse_row(line, columns, score)
            if row is not None:
                points.append({"seconds": round(time.perf_counter() - start, 2), **row})
    seconds = time.perf_counter() - start
    if process.returncode:
        raise RuntimeError(f"spacy train {config} failed with exit status {process.returncode}")
    scores = [p["score"] for p in points]
    return {
        "config": config,
        "args": extra,
        "points": points,
        "seconds": round(seconds, 1),
        "final": scores[-1] if scores else None,
        "best": max(scores) if scores else None,
    }


def time_to(run: Dict, score: float) -> Optional[float]:
    """Seconds until the run's dev score first reached `score`, None if never."""
    return next((p["seconds"] for p in run["points"] if p["score"] >= score), None)


def bars(record: Dict) -> Dict[str, float]:
    """The scores every run is timed against: the baseline's score and the
    reference's score less the tolerance, each the best dev score of its run
    (what its model-best, the model a training delivers, scores)."""
    runs, out = record["runs"], {}
    baseline, reference = record.get("baseline"), record.get("reference")
    if baseline in runs:
        out[f"{baseline}'s {runs[baseline]['best']:.2f}"] = runs[baseline]["best"]
    if reference in runs:
        bar = runs[reference]["best"] - record.get("tolerance", 0.1)
        out[f"{reference}'s {runs[reference]['best']:.2f} - {record.get('tolerance', 0.1)}"] = bar
    return out


def table(record: Dict) -> str:
    """A Markdown table: per run, its final and best dev scores, its wall time
    and when it first reached each bar (minutes, and the share of the
    reference's wall time)."""
    runs, targets = record["runs"], bars(record)
    reference = runs.get(record.get("reference") or "")
    head = "| run | settings | final | best | wall time |" + "".join(f" reaches {t} at |" for t in targets)
    lines = [head, "|" + "---|" * (5 + len(targets))]
    for name, run in runs.items():
        settings = " ".join(run.get("args") or []) or "as in the config"
        settings = f"`{run['config']}` {settings}" if run.get("config") else run.get("settings_text", "-")
        cells = [name, settings, f"{run['final']:.2f}", f"{run['best']:.2f}", f"{run['seconds'] / 60:.1f} min"]
        for score in targets.values():
            seconds = time_to(run, score)
            if seconds is None:
                cells.append("never")
            elif reference is not None:
                cells.append(f"{seconds / 60:.1f} min ({seconds / reference['seconds']:.0%})")
            else:
                cells.append(f"{seconds / 60:.1f} min")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: Dict[str, Dict], path: Path, score: str) -> None:
    """Dev score against minutes, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, run in runs.items():
        points = [p for p in run["points"] if p["step"] > 0]
        ax.plot(
            [p["seconds"] / 60 for p in points],
            [p["score"] for p in points],
            "o-",
            markersize=3,
            label=f"{name} (best {run['best']:.2f}, {run['seconds'] / 60:.1f} min)",
        )
    scores = [p["score"] for run in runs.values() for p in run["points"] if p["step"] > 0]
    if scores:
        top = max(scores)
        ax.set_ylim(max(min(scores), top - 5), top + 0.5)
    ax.set_xlabel("wall time (minutes)")
    ax.set_ylabel(f"dev {score}")
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="NAME=CONFIG[,SECTION.KEY=VALUE...]")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--score", default="tag_acc", help="the score column to follow")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path("training/time_to_accuracy"))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--merge", action="store_true", help="keep the other runs already in --output")
    parser.add_argument("--peer", action="append", default=[], help="NAME=JSON: a run recorded by another script")
    parser.add_argument("--baseline", help="the run whose final score every run is timed against")
    parser.add_argument("--reference", help="the run whose final score less --tolerance every run is timed against")
    parser.add_argument("--tolerance", type=float, default=0.1)
    args = parser.parse_args(argv)
    try:
        specs = [parse_run(spec) for spec in args.runs]
    except ValueError as error:
        parser.error(str(error))
    record = {"score": args.score, "threads": args.threads, "runs": {}, "tolerance": args.tolerance}
    if args.merge and args.output is not None and args.output.exists():
        record = {**record, **json.loads(args.output.read_text())}
    record["environment"] = environment()
    record.update({k: v for k, v in (("baseline", args.baseline), ("reference", args.reference)) if v})
    runs = record["runs"]
    for spec in args.peer:
        name, _, path = spec.partition("=")
        peer = json.loads(Path(path).read_text())
        runs[name] = {key: peer[key] for key in ("points", "seconds", "best", "final")}
        runs[name]["settings_text"] = peer.get("settings_text", f"recorded in {path}")
    for name, config, overrides in specs:
        runs[name] = run_training(
            config, args.train, args.dev, args.workdir / name, args.threads, args.score, overrides + extra
        )
        print(f"{name}: best {runs[name]['best']}, final {runs[name]['final']}, {runs[name]['seconds']:.0f} s")
        write_json(record, args.output)  # after every run: a long series loses nothing
    write_json(record, args.output)
    if runs:
        print(table(record))
    if args.plot:
        plot(runs, args.plot, args.score)
    return 0


if __name__ == "__main__":
    sys.exit(main())
