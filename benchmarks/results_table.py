"""Print the results table (Markdown) from the project's own outputs.

    python -m benchmarks.results_table metrics

Reads metrics/<name>.json (spacy evaluate), metrics/<name>-speed.json
(benchmarks.pipeline_speed) and training/<name>/train_time.json. A name
without its own configs/<name>.cfg is an ablation: its config column is the
config of the `spacy train` command in train_time.json. After the config come
the settings the run used that the config file does not have today: its
overrides, and what changed in the file since (read from the config spaCy saved
in training/<name>/model-best; without one, the command's overrides).
"""

import json
import sys
from pathlib import Path

from thinc.api import Config

NAMES = {
    "ner": "crf_ner (BILUO)",
    "ner_cpu": "crf_ner, cpu_morph.cfg's network",
    "ner_baseline": "spaCy ner (efficiency CNN)",
    "ner_beam": "spaCy beam_ner (efficiency CNN)",
    "baseline": "spaCy tagger (efficiency CNN)",
    "cpu": "crf_tagger, CPU config",
    "cpu_pos": "crf_tagger, CPU config, UPOS",
    "cpu_joint": "crf_tagger, CPU config, joint XPOS+UPOS",
    "cpu_char": "crf_tagger, CPU config + character CNN",
    "cpu_char_pos": "crf_tagger, CPU config + character CNN, UPOS",
    "cpu_char_joint": "crf_tagger, CPU config + character CNN, joint XPOS+UPOS",
    "baseline_pos": "spaCy morphologizer (efficiency CNN), UPOS",
    "softmax": "crf_tagger softmax ablation",
    "transformer": "crf_tagger + transformer",
    "transformer_case": "crf_tagger + transformer + case features",
    "transformer_case_1500": "crf_tagger + transformer + case features, 1,500-step schedule",
    "transformer_case_lstm": "crf_tagger + transformer + case features + BiLSTM",
    "ner_transformer": "crf_ner + transformer + case features",
    "cpu_depth2": "crf_tagger, CPU config, 2 BiLSTM layers",
    "cpu_bytes16": "crf_tagger, CPU config, 16 bytes a word",
    "cpu_v3": "crf_tagger, CPU config, byte table with every token's gradient",
    "cpu_char_wd25": "crf_tagger, CPU config + character CNN, word dropout 0.25",
    "cpu_wd25": "crf_tagger, CPU config, word dropout 0.25",
    "cpu_wd40": "crf_tagger, CPU config, word dropout 0.4",
    "cpu_wd25_12k": "crf_tagger, CPU config, word dropout 0.25, 12,000 steps",
    "cpu_pos_wd25": "crf_tagger, CPU config, UPOS, word dropout 0.25",
    "cpu_joint_wd25": "crf_tagger, CPU config, joint XPOS+UPOS, word dropout 0.25",
    "cpu_seed1": "crf_tagger, CPU config, seed 1",
    "cpu_seed2": "crf_tagger, CPU config, seed 2",
    "cpu_wd05_seed1": "crf_tagger, CPU config, word dropout 0.05, seed 1",
    "transformer_case_seed1": "crf_tagger + transformer + case features, seed 1",
}


def config_of(root: Path, name: str) -> str:
    """`configs/<name>.cfg` (or, for an ablation, the config its training
    command used) and the settings of the run that differ from that file."""
    time_path = root / "training" / name / "train_time.json"
    command = json.loads(time_path.read_text())["command"] if time_path.exists() else []
    config = f"configs/{name}.cfg" if (root / "configs" / f"{name}.cfg").exists() else None
    config = config or next((arg for arg in command if arg.endswith(".cfg")), "?")
    saved = root / "training" / name / "model-best" / "config.cfg"
    if saved.exists() and (root / config).exists():
        settings = settings_changed(root / config, saved)
    else:
        settings = command_overrides(command)
    return f"`{config}`" + (" " + ", ".join(settings) if settings else "")


def command_overrides(command: list) -> list:
    """`setting = value` for each `--section.setting value` of a command (paths
    and the output folder left out)."""
    overrides, i = [], 0
    while i < len(command):
        if command[i].startswith("--") and not command[i].startswith(("--paths.", "--output", "--gpu-id")):
            value = command[i + 1] if i + 1 < len(command) else ""
            overrides.append(f"{command[i].split('.')[-1]} = {value}")
            i += 2
        else:
            i += 1
    return overrides


def settings_changed(config: Path, saved: Path) -> list:
    """`setting = value` for each setting of the run's saved config that the
    config file has with another value, or not at all ([paths] left out)."""
    today = flat(Config().from_disk(config, interpolate=False))
    run = flat(Config().from_disk(saved, interpolate=False))
    return [
        f"{key.split('.')[-1]} = {value}"
        for key, value in run.items()
        if not key.startswith("paths.") and today.get(key, object()) != value
    ]


def flat(section: dict, prefix: str = "") -> dict:
    """A nested config section as {"section.sub.setting": value}."""
    items = {}
    for key, value in section.items():
        if isinstance(value, dict):
            items.update(flat(value, f"{prefix}{key}."))
        else:
            items[prefix + key] = value
    return items


def percent(value):
    return "-" if value is None else f"{100 * value:.2f}"


def is_evaluate_output(scores: dict) -> bool:
    """Whether a metrics/ JSON is `spacy evaluate`'s (a tagger's or a recogniser's scores)."""
    return "tag_acc" in scores or "pos_acc" in scores or "ents_f" in scores


def main(metrics_dir: str) -> None:
    metrics = Path(metrics_dir)
    root = metrics.parent
    taggers, recognisers = [], []
    for path in sorted(metrics.glob("*.json")):
        scores = json.loads(path.read_text())
        if not is_evaluate_output(scores):
            continue
        if "tag_acc" in scores or "pos_acc" in scores:
            taggers.append((path.stem, scores))
        else:
            recognisers.append((path.stem, scores))

    def train_time(config):
        time_path = root / "training" / config / "train_time.json"
        seconds = json.loads(time_path.read_text()).get("train_seconds") if time_path.exists() else None
        # a run cut short (no wall time recorded) keeps its command and shows "-"
        return "-" if seconds is None else f"{seconds / 60:.1f} min"

    print("| pipeline | config | tag_acc | pos_acc | train time | words/s |")
    print("|---|---|---|---|---|---|")
    for config, scores in taggers:
        speed_path = metrics / f"{config}-speed.json"
        speed = json.loads(speed_path.read_text())["words_per_second"] if speed_path.exists() else None
        print(
            f"| {NAMES.get(config, config)} | {config_of(root, config)} | {percent(scores.get('tag_acc'))} "
            f"| {percent(scores.get('pos_acc'))} | {train_time(config)} "
            f"| {'-' if speed is None else f'{speed:,}'} |"
        )
    if recognisers:
        print()
        print("| pipeline | config | ents_p | ents_r | ents_f | train time |")
        print("|---|---|---|---|---|---|")
        for config, scores in recognisers:
            print(
                f"| {NAMES.get(config, config)} | {config_of(root, config)} | {percent(scores['ents_p'])} "
                f"| {percent(scores['ents_r'])} | {percent(scores['ents_f'])} | {train_time(config)} |"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "metrics")
