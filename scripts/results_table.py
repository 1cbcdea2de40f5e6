"""Print the results table (Markdown) from the project's own outputs.

    python scripts/results_table.py metrics

Reads metrics/<config>.json (spacy evaluate), metrics/<config>-speed.json
(benchmarks/pipeline_speed.py) and training/<config>/train_time.json.
"""
import json
import sys
from pathlib import Path

NAMES = {
    "baseline": "spaCy tagger (efficiency CNN)",
    "cpu": "crf_tagger, CPU config",
    "softmax": "crf_tagger softmax ablation",
    "transformer": "crf_tagger + transformer",
}


def percent(value):
    return "-" if value is None else f"{100 * value:.2f}"


def main(metrics_dir: str) -> None:
    metrics = Path(metrics_dir)
    root = metrics.parent
    print("| pipeline | config | tag_acc | pos_acc | train time | words/s |")
    print("|---|---|---|---|---|---|")
    for path in sorted(metrics.glob("*.json")):
        if path.stem.endswith("-speed"):
            continue
        config = path.stem
        scores = json.loads(path.read_text())
        speed_path = metrics / f"{config}-speed.json"
        speed = json.loads(speed_path.read_text())["words_per_second"] if speed_path.exists() else None
        time_path = root / "training" / config / "train_time.json"
        seconds = json.loads(time_path.read_text())["train_seconds"] if time_path.exists() else None
        print(
            f"| {NAMES.get(config, config)} | `configs/{config}.cfg` | {percent(scores.get('tag_acc'))} "
            f"| {percent(scores.get('pos_acc'))} | {'-' if seconds is None else f'{seconds / 60:.1f} min'} "
            f"| {'-' if speed is None else f'{speed:,}'} |"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "metrics")
