"""The converged transformer comparison's table and learning curves, from the
run records of `benchmarks.converged` (benchmarks/runs/converged/*.json).

    python -m benchmarks.converged_report [--runs benchmarks/runs/converged] [--plot FILE.png]

A record's name says what it is: TASK_SYSTEM_sSEED.json ("ner10_crf_s0":
entities on 10% of the train docs, crf_ner, seed 0). Per task and head the
table gives the seeds, how many converged (patience stopped them, not the
cap), their steps and best steps, and the score on the held-out dev half:
mean and range over the seeds. Where both heads have per-doc counts for the
same seeds, a paired bootstrap over the held-out docs pools the seeds: each
draw resamples the docs once and sums both heads' counts over every seed.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy

from benchmarks.converged import pooled_score

RUNS = Path(__file__).parent / "runs" / "converged"
# a record's TASK: what is scored, on which data, and the score
TASKS = {
    "ner10": ("entities", "UNER English EWT, 10% of train docs", "ents_f"),
    "tag10": ("tags", "UD English EWT, 10% of train docs", "tag_acc"),
    "ner": ("entities", "UNER English EWT, all train docs", "ents_f"),
    "tag": ("tags", "UD English EWT, all train docs", "tag_acc"),
    "morph": ("UPOS", "UD English EWT, all train docs", "pos_acc"),
}
# a record's HEAD, per kind of task; the paired test is CRF against spaCy's
HEADS = {
    "entities": {"crf": "crf_ner", "spacy": "spaCy ner", "beam": "spaCy beam_ner"},
    "tags": {"crf": "crf_tagger", "spacy": "spaCy tagger"},
    "UPOS": {"crf": "crf_morphologizer", "spacy": "spaCy morphologizer"},
}
PAIRED = ("crf", "spacy")


def load_runs(folder: Path = RUNS) -> Dict[Tuple[str, str], Dict[int, Dict[str, Any]]]:
    """{(task, head): {seed: record}} of the folder's records."""
    runs: Dict[Tuple[str, str], Dict[int, Dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.json")):
        task, head, seed = path.stem.rsplit("_", 2)
        runs.setdefault((task, head), {})[int(seed.lstrip("s"))] = json.loads(path.read_text())
    return runs


def _metric(counts: numpy.ndarray, score: str) -> numpy.ndarray:
    """F1 (ents_f) or accuracy (tag_acc) of summed counts, last axis the counts."""
    if score == "ents_f":
        tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
        return 2 * tp / numpy.maximum(2 * tp + fp + fn, 1)
    return counts[..., 0] / numpy.maximum(counts[..., 1], 1)


def has_counts(record: Dict[str, Any]) -> bool:
    """Whether the record's per-doc counts exist and add up to its score (the
    runs scored before the per-doc counts were read from the predicted docs
    carry counts of unannotated docs, which do not)."""
    per_doc = record["score"].get("per_doc")
    if not per_doc or not per_doc["counts"]:
        return False
    return abs(pooled_score(per_doc) - record["score"][per_doc["score"]]) <= 1e-9


def pooled_bootstrap(
    a: List[Dict[str, Any]], b: List[Dict[str, Any]], *, draws: int = 10000, seed: int = 0
) -> Optional[Dict[str, float]]:
    """Paired bootstrap of A's score minus B's over the held-out docs, the
    seeds pooled (records paired by seed, each with score.per_doc); None
    where a record lacks its counts. Returns both pooled scores, the
    difference, its 95% interval and a two-sided p-value (at least 1/draws)."""
    if not a or not all(has_counts(r) for r in a + b):
        return None
    if len({r["score"]["per_doc"]["score"] for r in a + b}) > 1:
        return None  # the records count different scores (tag_acc against pos_acc): no test
    score = a[0]["score"]["per_doc"]["score"]
    counts_a = numpy.asarray([r["score"]["per_doc"]["counts"] for r in a], dtype="float64")  # (seeds, docs, k)
    counts_b = numpy.asarray([r["score"]["per_doc"]["counts"] for r in b], dtype="float64")
    n_docs = counts_a.shape[1]
    rng = numpy.random.default_rng(seed)
    drawn = rng.integers(0, n_docs, size=(draws, n_docs))
    sum_a = counts_a.sum(axis=0)[drawn].sum(axis=1)  # (draws, k)
    sum_b = counts_b.sum(axis=0)[drawn].sum(axis=1)
    differences = _metric(sum_a, score) - _metric(sum_b, score)
    observed_a = float(_metric(counts_a.sum(axis=(0, 1)), score))
    observed_b = float(_metric(counts_b.sum(axis=(0, 1)), score))
    far_side = (differences <= 0).mean() if observed_a > observed_b else (differences >= 0).mean()
    low, high = numpy.percentile(differences, [2.5, 97.5])
    return {
        "a": observed_a,
        "b": observed_b,
        "difference": observed_a - observed_b,
        "low": float(low),
        "high": float(high),
        "p": float(min(1.0, max(2 * far_side, 1 / draws))),
        "draws": draws,
        "docs": n_docs,
        "seeds": len(a),
    }


def _percent(value: float) -> str:
    return f"{100 * value:.2f}"


def table(folder: Path = RUNS) -> Optional[str]:
    """The Markdown table of the folder's runs; None without runs."""
    runs = load_runs(folder)
    if not runs:
        return None
    lines = [
        "| task | head | seeds | converged | steps run (best step) | held-out dev: mean (range) |",
        "|---|---|---|---|---|---|",
    ]
    tests = []
    for task, (kind, data, score) in TASKS.items():
        for head, name in HEADS[kind].items():
            records = runs.get((task, head), {})
            if not records:
                continue
            seeds = sorted(records)
            values = [records[s]["score"][score] for s in seeds]
            converged = sum(records[s]["converged"] for s in seeds)
            steps = ", ".join(f"{records[s]['steps']} ({records[s]['best_step']})" for s in seeds)
            spread = f" ({_percent(min(values))}-{_percent(max(values))})" if len(values) > 1 else ""
            lines.append(
                f"| {kind}, {data} | {name} | {', '.join(map(str, seeds))} | {converged} of {len(seeds)} | "
                f"{steps} | {_percent(statistics.mean(values))}{spread} |"
            )
        both = sorted(set(runs.get((task, "crf"), {})) & set(runs.get((task, "spacy"), {})))
        counted = [s for s in both if all(has_counts(runs[(task, h)][s]) for h in PAIRED)]
        result = pooled_bootstrap(
            [runs[(task, "crf")][s] for s in counted], [runs[(task, "spacy")][s] for s in counted]
        )
        lacking = [s for s in both if s not in counted]
        if result is not None:
            tests.append(
                f"- {kind}, {data}: CRF minus spaCy, {_seeds(counted)} "
                f"pooled over the {result['docs']} held-out docs: {100 * result['difference']:+.2f} (95% interval "
                f"{100 * result['low']:+.2f} to {100 * result['high']:+.2f}, p = {result['p']:.3g}, "
                f"{result['draws']:,} draws)"
            )
        if lacking:
            tests.append(
                f"- {kind}, {data}: {_seeds(lacking)} {'is' if len(lacking) == 1 else 'are'} not in the paired bootstrap: "
                "a record lacks per-doc counts that add up "
                "to its score (`python -m benchmarks.converged ... --rescore` on the trained pipelines adds them)"
            )
        ran = [head for head in PAIRED if runs.get((task, head))]
        if len(ran) == 1:
            missing = HEADS[kind][PAIRED[1 - PAIRED.index(ran[0])]]
            tests.append(f"- {kind}, {data}: {missing} has no run yet, so the two heads are not compared")
    return "\n".join(lines + ([""] + tests if tests else []))


def _seeds(seeds: List[int]) -> str:
    """ "seed 1" or "seeds 0, 1"."""
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def summary(folder: Path = RUNS, *, min_seeds: int = 3) -> Optional[str]:
    """The README's lines: per task where both heads have at least min_seeds
    seeds, all converged, each head's mean (range) on the held-out dev half
    and the paired bootstrap where there is one; "" where no task has them,
    None where the folder has no run records."""
    runs = load_runs(folder)
    if not runs:
        return None
    rows = []
    for task, (kind, data, score) in TASKS.items():
        heads = [runs.get((task, head), {}) for head in PAIRED]
        seeds = sorted(set(heads[0]) & set(heads[1]))
        if len(seeds) < min_seeds or not all(h[s]["converged"] for h in heads for s in seeds):
            continue
        cells = []
        for records in heads:
            values = [records[s]["score"][score] for s in seeds]
            cells.append(f"{_percent(statistics.mean(values))} ({_percent(min(values))}-{_percent(max(values))})")
        # the test only over every seed shown: a subset's difference is not the means' difference
        lacking = [s for s in seeds if not all(has_counts(h[s]) for h in heads)]
        if lacking:
            test = f"not yet ({_seeds(lacking)} lack{'s' if len(lacking) == 1 else ''} per-doc counts)"
        else:
            result = pooled_bootstrap([heads[0][s] for s in seeds], [heads[1][s] for s in seeds])
            test = f"{100 * result['difference']:+.2f} (p = {result['p']:.2g}, {_seeds(seeds)})" if result else "-"
        names = " / ".join(HEADS[kind][head] for head in PAIRED)
        rows.append(f"| {kind}, {data} | {names} | {', '.join(map(str, seeds))} | {cells[0]} | {cells[1]} | {test} |")
    if not rows:
        return ""
    return "\n".join(
        [
            "On all-MiniLM-L6-v2 (fine-tuned), each head trained until its dev score stopped rising, scored on "
            "a held-out half of dev: mean (range) over the seeds, and the paired bootstrap of CRF minus spaCy:",
            "",
            "| task, data | heads | seeds | CRF | spaCy | CRF - spaCy |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )


def plot(folder: Path, path: Path) -> None:
    """The dev score (on the selection half) against steps, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load_runs(folder)
    tasks = [task for task in TASKS if any(key[0] == task for key in runs)]
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.2), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        kind, data, score = TASKS[task]
        for head, color in (("crf", "tab:blue"), ("spacy", "tab:orange"), ("beam", "tab:green")):
            for seed, record in sorted(runs.get((task, head), {}).items()):
                # the task's score (the selection's weighted score where the log lacks it), in percent
                curve = {e["step"]: e.get("scores", {}).get(score, 100 * e["score"]) for e in record["evaluations"]}
                label = f"{HEADS[kind][head]}, seed {seed}"
                ax.plot(
                    list(curve),
                    list(curve.values()),
                    color=color,
                    alpha=min(1.0, 0.4 + 0.2 * seed),
                    linewidth=1.2,
                    label=label,
                )
                ax.plot([record["best_step"]], [curve[record["best_step"]]], "o", color=color, markersize=4)
        ax.set_title(f"{kind}: {data}", fontsize=10)
        ax.set_xlabel("training step (batches of 2000 padded tokens)")
        ax.set_ylabel(f"{score} on the selection dev half")
        ax.set_ylim(0, 100)
        ax.grid(True, linewidth=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("all-MiniLM-L6-v2 fine-tuned with each head until patience; dots: the chosen step", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--plot", type=Path, default=None, help="write the learning curves to this image")
    args = parser.parse_args(argv)
    print(table(args.runs) or "no runs")
    if args.plot is not None:
        plot(args.runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
