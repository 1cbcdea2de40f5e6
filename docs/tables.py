"""Fill the tables of README.md and docs/benchmarks.md from the project's own outputs,
and the settings tables of the component pages from the settings' declarations.

    python -m docs.tables [--root .] [--check]

Each table sits between `<!-- table:NAME:start -->` and `<!-- table:NAME:end -->`
(`<!-- results:start -->` / `<!-- results:end -->` in README.md) and is rendered
from the JSON files that the project's commands write under metrics/ (the
command behind each table is on the benchmarks page, above it). A table whose
outputs are not there is left as it is, so the command can run anywhere
without wiping what was measured elsewhere. Every table opens with the hardware
and versions its outputs recorded. --check exits 1 if a file would change.
"""

import argparse
import functools
import io
import json
import math
import re
import shutil
import statistics
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from benchmarks.gpu import kernel_table as gpu_kernel_table
from benchmarks.pipeline_compare import TRAINING_UNITS
from benchmarks.quantize import table as quantize_table

PAGES = [
    "README.md",
    "docs/benchmarks.md",
    "docs/tagger.md",
    "docs/morphologizer.md",
    "docs/ner.md",
    "docs/distillation.md",
]


def environment_line(*records: dict) -> str:
    """ "Measured on ..." from the records' environments: each machine and each
    set of versions once, so that a table whose runs were measured on two kinds
    of CPU (which round differently, and train to other weights) says so."""
    envs = [r["environment"] for r in records if r and r.get("environment")]
    if not envs:
        return "Measured on: not recorded."
    devices = list(dict.fromkeys(_device(env) for env in envs))
    versions = list(dict.fromkeys(_versions(env) for env in envs))
    split = ", the runs split between them" if len(devices) > 1 else ""
    steady = (
        " malloc: steady (freed memory kept in the process, `--allocator steady`)."
        if all(env.get("allocator") == "steady" for env in envs)
        else ""
    )
    return f"Measured on: {' and '.join(devices)}{split}; {' and '.join(versions)}.{steady}"


def _device(env: dict) -> str:
    flags = f"; {', '.join(env['cpu_flags'])}" if env.get("cpu_flags") else ""
    return env["gpu"] or f"{env['cpu']} ({env['logical_cpus']} logical CPUs{flags})"


def _versions(env: dict) -> str:
    return f"Python {env['python']}, torch {env['torch']}, spaCy {env['spacy']}, spacy-crf {env['spacy_crf']}"


def load(path: Path) -> Optional[dict]:
    return json.loads(path.read_text()) if path.exists() else None


def results(root: Path) -> Optional[str]:
    """The results command's table (benchmarks.results_table)."""
    from benchmarks.results_table import is_evaluate_output
    from benchmarks.results_table import main as results_table

    metrics = root / "metrics"
    # `spacy evaluate` outputs; other benchmarks also write to metrics/ (contention.json)
    if not any(is_evaluate_output(load(path)) for path in metrics.glob("*.json")):
        return None
    out = io.StringIO()
    with redirect_stdout(out):
        results_table(str(metrics))
    speeds = [load(path) for path in sorted(metrics.glob("*-speed.json"))]
    table = drop_column(out.getvalue().strip(), "train time")  # timed on a shared machine
    return environment_line(*speeds) + " Words/s: `nlp.pipe`, one thread.\n\n" + table


def drop_column(markdown: str, header: str) -> str:
    """The Markdown tables of the text without the column named header."""
    lines, drop = [], None
    for line in markdown.splitlines():
        cells = line.strip().strip("|").split("|") if line.startswith("|") else None
        if cells is None:
            drop = None
            lines.append(line)
            continue
        if drop is None:
            names = [c.strip() for c in cells]
            drop = names.index(header) if header in names else -1
        if drop >= 0:
            del cells[drop]
        lines.append("|" + "|".join(cells) + "|")
    return "\n".join(lines)


def training_unit(compare: Dict) -> str:
    """What pipeline_compare trained on, from its record ("" for a record
    that predates the field)."""
    units = set((compare.get("train_examples") or {}).values())
    if units == {TRAINING_UNITS[True]}:
        return "one training sentence per example, on its gold tokens, as `spacy train` reads them for both configs"
    if units == {TRAINING_UNITS[False]}:
        return "the training corpus' docs of 10 sentences, through spaCy's tokenizer"
    return ", ".join(sorted(units))


def pipeline_compare(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/pipeline_compare*.json (`python -m benchmarks.pipeline_compare
    ... [--whole-docs]`), a table each."""
    records = [load(path) for path in sorted((root / "metrics" / folder).glob("pipeline_compare*.json"))]
    tables = [pipeline_compare_table(r) for r in records if r]
    return "\n\n".join(tables) if tables else None


def pipeline_compare_table(r: Dict) -> str:
    p, t = r["pipe_words_per_second"], r["train_words_per_second"]
    unit = training_unit(r)
    lines = [
        f"{environment_line(r)} {r['threads']} thread(s).{' Training: ' + unit + '.' if unit else ''}",
        "",
        "| pipeline | nlp.pipe words/s | training words/s |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {p[name]:,} | {t[name]:,} |" for name in p]
    lines += [
        "",
        f"crf_tagger / spaCy tagger: `nlp.pipe` {p['crf_tagger'] / p['spaCy tagger']:.2f}x, training "
        f"{t['crf_tagger'] / t['spaCy tagger']:.2f}x; Viterbi decoding takes "
        f"{100 * r['decode_share_of_encoder']:.1f}% of the encoder's time in `predict`.",
    ]
    return "\n".join(lines)


def round_ratios(ours: List[float], theirs: List[float]) -> List[float]:
    """The per-round ratios of two systems timed in turn, sorted."""
    return sorted(a / b for a, b in zip(ours, theirs, strict=True))


def ratio_cell(ratios: List[float], digits: int) -> str:
    """ "median (lowest-highest)" of sorted ratios."""
    return f"{statistics.median(ratios):.{digits}f}x ({ratios[0]:.{digits}f}x-{ratios[-1]:.{digits}f}x)"


PEER_NAMES = {
    "crf_tagger": "crf_tagger",
    "crf_tagger_int8": "crf_tagger, quantize int8",
    "crf_tagger_bf16": "crf_tagger, quantize bf16",
    "spacy_tagger": "spaCy tagger",
    "flair": "Flair",
    "crf_tagger_fast": "crf_tagger `cpu_fast.cfg`",
    "crf_tagger_fast_int8": "crf_tagger `cpu_fast.cfg`, quantize int8",
    "crf_tagger_batch_words_0": "crf_tagger, batch_words 0",
    "crf_tagger_int8_batch_words_0": "crf_tagger, quantize int8, batch_words 0",
}


def peers(root: Path, folder: str = "speed", rounds: bool = False, against_tagger: bool = False) -> Optional[str]:
    """metrics/FOLDER/flair.json (`python -m benchmarks.peers ...`), with the
    training words/s of metrics/FOLDER/pipeline_compare.json; `rounds` adds
    the median and range of each round's ratio to Flair (the systems take
    turns, so a round's ratio is measured side by side), `against_tagger`
    the same against spaCy's tagger ("spacy_tagger")."""
    flair = load(root / "metrics" / folder / "flair.json")
    if flair is None:
        return None
    compare = load(root / "metrics" / folder / "pipeline_compare.json") or {}
    trained = {"flair": flair["train_words_per_second"], **compare.get("train_words_per_second", {})}
    unit = training_unit(compare)
    sides = flair.get("side_by_side") or {
        "flair": {"words_per_second": flair["pipe_words_per_second"], "dev_accuracy": flair["dev_accuracy"]}
    }
    base = sides["flair"]
    per_round = "| inference vs Flair, per round: median (range) " if rounds else ""
    tagger_runs = (sides.get("spacy_tagger") or {}).get("runs") if against_tagger else None
    per_round += "| vs spaCy's tagger, per round: median (range) " if tagger_runs else ""
    lines = [
        f"| system | dev accuracy | inference words/s | vs Flair {per_round}| training words/s | vs Flair |",
        "|---|---|---|---|---|---|" + ("---|" if rounds else "") + ("---|" if tagger_runs else ""),
    ]
    for name, side in sides.items():
        label = PEER_NAMES.get(name, name)
        train = trained.get(label) if name != "flair" else trained["flair"]
        train_cells = f"{train:,.0f} | {train / trained['flair']:.1f}x" if train else "- | -"
        round_cell = ""
        if rounds and side.get("runs") and base.get("runs"):
            round_cell = f"| {ratio_cell(round_ratios(side['runs'], base['runs']), 1)} "
        elif rounds:
            round_cell = "| - "
        if tagger_runs:
            round_cell += f"| {ratio_cell(round_ratios(side['runs'], tagger_runs), 2)} " if side.get("runs") else "| - "
        lines.append(
            f"| {label} | {side['dev_accuracy']:.2f} | {side['words_per_second']:,.0f} "
            f"| {side['words_per_second'] / base['words_per_second']:.1f}x {round_cell}| {train_cells} |"
        )
    s = flair["settings"]
    head = (
        f"{environment_line(flair)} {flair['settings_text']}; {flair['epochs_done']} epoch{'s' if flair['epochs_done'] != 1 else ''} "
        f"({flair['seconds'] / 60:.0f} min{', stopped by --max-minutes' if flair['stopped_early'] else ''}). "
        f"Dev accuracy: {s['column'].upper()} on gold tokens. Inference: one doc per sentence, batch "
        f"{s['predict_batch_size']}, one thread, the systems in turn, medians of {s['repeats']}. Training words/s: "
        f"Flair's inside its epochs"
        + (
            f"; crf_tagger's and spaCy's from `pipeline_compare` (`nlp.update`{', ' + unit if unit else ''})."
            if compare
            else " (the others' were not measured with these runs)."
        )
    )
    return head + "\n\n" + "\n".join(lines)


BATCH_SIZE_FOLDERS = (
    "speed/batch_words_16",
    "speed/batch_words_32",
    "speed/batch_words_64",
    "speed/batch_words",
    "speed/batch_words_2048",
)


def peers_batch_sizes(root: Path, folders: Tuple[str, ...] = BATCH_SIZE_FOLDERS) -> Optional[str]:
    """metrics/FOLDER/flair.json of `benchmarks.peers` runs at several
    `--batch-size` (Flair's predict mini-batch and nlp.pipe's batch_size), a
    row each: every system's words/s and the median of its per-round ratios to
    Flair; crf_tagger's per-round ratio to spaCy's tagger."""
    records = [r for r in (load(root / "metrics" / folder / "flair.json") for folder in folders) if r]
    if not records:
        return None
    systems = [
        ("crf_tagger", "crf_tagger"),
        ("crf_tagger_batch_words_0", "crf_tagger, batch_words 0"),
        ("crf_tagger_int8", "crf_tagger int8"),
        ("crf_tagger_int8_batch_words_0", "crf_tagger int8, batch_words 0"),
        ("spacy_tagger", "spaCy tagger"),
    ]

    def per_round(ours: Dict, theirs: Dict) -> float:
        return statistics.median(round_ratios(ours["runs"], theirs["runs"]))

    lines = [
        f"{environment_line(records[0])} One doc per sentence of EWT dev, one thread, the systems in turn, "
        f"medians of {records[0]['settings']['repeats']} rounds; in brackets the median of the per-round ratios to Flair.",
        "",
        "| batch size | Flair | "
        + " | ".join(label for _, label in systems)
        + " | crf_tagger / spaCy tagger, per round |",
        "|---|---|" + "---|" * len(systems) + "---|",
    ]
    for r in sorted(records, key=lambda r: r["settings"]["predict_batch_size"]):
        sides = r["side_by_side"]
        cells = [f"{sides['flair']['words_per_second']:,.0f}"]
        for name, _ in systems:
            side = sides.get(name)
            cells.append(f"{side['words_per_second']:,.0f} ({per_round(side, sides['flair']):.1f}x)" if side else "-")
        tagger = sides.get("spacy_tagger")
        cells.append(f"{per_round(sides['crf_tagger'], tagger):.2f}x" if tagger else "-")
        lines.append(f"| {r['settings']['predict_batch_size']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def morph(root: Path) -> Optional[str]:
    """The morph workflow's tables, one per treebank (benchmarks.morph_table)."""
    metrics = root / "metrics"
    folders = sorted(p for p in (metrics / "morph").glob("*") if p.is_dir())
    if not folders:
        return None
    from benchmarks.morph_table import treebank_table

    speeds = [load(path) for folder in folders for path in sorted(folder.glob("*-speed.json"))]
    parts = [
        environment_line(*speeds) + " Train time: `spacy train` wall time, one thread, never beside another "
        "training (lighter work, such as tests, ran on the second core)."
    ]
    for folder in folders:
        # words/s measured one pipeline at a time: the quantize-morph-amd table times them in turn
        parts.append(drop_column("\n".join(treebank_table(metrics, folder.name)), "words/s"))
    return "\n\n".join(parts)


def quantize(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/quantize*.json: `python -m benchmarks.quantize ...`, a
    table per run."""
    records = [load(path) for path in sorted((root / "metrics" / folder).glob("quantize*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    first = records[0]
    head = (
        f"{environment_line(*records)} {first['threads']} thread(s), the pipelines in turn, medians of "
        f"{first['repeats']}; dev score on the corpus' sentences (`spacy evaluate --gold-preproc`)."
    )
    parts = [f"`{r['crf_model']}` against `{r['baseline_model']}`:\n\n{quantize_table(r)}" for r in records]
    return head + "\n\n" + "\n\n".join(parts)


def udpipe(root: Path) -> Optional[str]:
    """metrics/peers/udpipe_*.json (`python -m benchmarks.udpipe`): UDPipe 1's
    tagger trained and scored on each treebank's train and dev files."""
    records = [load(path) for path in sorted((root / "metrics" / "peers").glob("udpipe_*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    lines = [
        "| treebank | system | tagger options | UPOS | UFeats | UPOS+FEATS | AllTags | train time | words/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['treebank']} | {r['system']} | {r['tagger_options']} | {r['upos']:.2f} | {r['ufeats']:.2f} "
            f"| {r['upos_feats']:.2f} | {r['alltags']:.2f} | {r['train_minutes']} min | {r['words_per_second']:,} |"
        )
    head = (
        f"{environment_line(*records)} Dev words (gold tokenization), the dev file as UDPipe's heldout data; "
        "train time: UDPipe's trainer, one thread; words/s: its tagging of the dev words, one thread."
    )
    return head + "\n\n" + "\n".join(lines)


def _measured_on(record: dict) -> Tuple[str, str]:
    """The docs a record of benchmarks.entity_probabilities measured, and its
    temperatures: one pipeline, or the pairs it pooled (--and)."""
    pairs = record.get("pairs") or [record]
    where = " + ".join(Path(pair["dev"]).name for pair in pairs)
    taus = ", ".join(f"{pair['temperature']:.2f}" for pair in pairs if pair.get("temperature") is not None)
    return where, taus


def entity_probabilities(root: Path, prefix: str = "crossfit_", folder: str = "calibration") -> Optional[str]:
    """metrics/FOLDER/PREFIX*.json: benchmarks.entity_probabilities records.
    "crossfit_" (the project's entity-probabilities-crossfit): each dev half
    measured by the pipeline calibrated on the other, pooled (`--and`);
    "folds_" (entity-probabilities-folds): each train fold measured by the
    pipeline trained on the other folds."""
    paths = sorted((root / "metrics" / folder).glob(f"{prefix}*.json"))
    records = {path.stem[len(prefix) :]: load(path) for path in paths}
    # the precision/recall plot of a record: pr_PREFIXNAME.png, copied into docs/images
    plots = {
        path.stem[len(prefix) :]: f"pr_{path.stem}.png"
        for path in paths
        if (root / "metrics" / folder / f"pr_{path.stem}.png").exists()
    }
    return entity_probability_tables(records, plots)


def converged_probabilities(root: Path) -> Optional[str]:
    """benchmarks/runs/converged/probabilities/*.json
    (`python -m benchmarks.converged_probabilities`): a converged run's
    entity probabilities, cross-fitted on its dev halves; the plots are
    docs/images/pr_converged_NAME.png."""
    paths = sorted((root / "benchmarks" / "runs" / "converged" / "probabilities").glob("*.json"))
    records = {path.stem: load(path) for path in paths}
    plots = {
        path.stem: f"pr_converged_{path.stem}.png"
        for path in paths
        if (root / "docs" / "images" / f"pr_converged_{path.stem}.png").exists()
    }
    return entity_probability_tables(records, plots)


def _probabilities_kind(r: Dict) -> str:
    """How a record's probabilities were made: crf_ner's posteriors at their
    temperatures (and what these were fitted to), or beam_ner's beam scores."""
    if r["system"] == "beam_ner":
        return f"beam scores (width {(r.get('beam') or {}).get('beam_width', '?')})"
    _, taus = _measured_on(r)
    objective = r.get("objective")
    if objective == "none":
        return f"exact posteriors as trained, tau = {taus}"
    fitted = f" fitted to {objective}" if objective else ""
    return f"exact posteriors, tau{fitted} = {taus}"


# records of runs from before crf_ner name its component by the 0.x
# factory that built it: a crf_tagger with target "ents", which is crf_ner
ENTITY_SYSTEMS = {"crf_tagger": "crf_ner"}


def entity_probability_tables(records: Dict[str, Dict], plots: Dict[str, str]) -> Optional[str]:
    """The calibration table, the precision/recall over t table and the plots
    (docs/images/PLOT) of benchmarks.entity_probabilities records, by name."""
    if not records:
        return None
    lines = [
        "| model | system | probabilities | measured on | n | ECE | ECE of sampling alone | Brier "
        "| precision of p >= 0.9 (n) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in records.items():
        e = r["entities"]
        where, _ = _measured_on(r)
        at = (e.get("precision_at") or {}).get("0.9") or {}
        high = "-" if at.get("precision") is None else f"{at['precision']:.4f} ({at['n']:,})"
        floor = "-" if e.get("ece_sampling") is None else f"{e['ece_sampling']:.4f}"
        lines.append(
            f"| `{name}` | {ENTITY_SYSTEMS.get(r['system'], r['system'])} | {_probabilities_kind(r)} | {where} "
            f"| {e['n']:,} | {e['ece']:.4f} "
            f"| {floor} | {e['brier']:.4f} | {high} |"
        )
    shown = [0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99]
    curve = ["| t | " + " | ".join(f"`{name}` P / R / F1" for name in records) + " |", "|---|" + "---|" * len(records)]
    for t in shown:
        cells = []
        for r in records.values():
            row = next((x for x in r["thresholds"] if abs(x["threshold"] - t) < 1e-9), None)
            if row is None:
                cells.append("-")
                continue
            cells.append(" / ".join(_percent(row[key]) for key in ("precision", "recall", "f1")))
        curve.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    images = [f"![precision and recall over t, {name}](images/{plots[name]})" for name in records if name in plots]
    first = next(iter(records.values()))
    head = (
        f"{environment_line(*records.values())} {'Gold tokens' if first.get('gold_preproc') else 'Raw text'}; "
        "ECE: 15 equal-width bins; the ECE of sampling alone is what a perfectly calibrated model with the same "
        "probabilities would show on as many entities (`spacy_crf.calibration.sampling_ece`)."
    )
    return (
        head + "\n\n" + "\n".join(lines) + "\n\nKeeping only the entities with probability >= t "
        "(`crf_ner`'s `threshold`), in percent:\n\n" + "\n".join(curve) + ("\n\n" + "\n".join(images) if images else "")
    )


TRF_TASKS = (  # metrics/trf/FILE.json, the task, the share of the train docs, the scores shown
    ("tagger", "XPOS, UD English EWT", "100%", ["tag_acc"]),
    ("morph", "UPOS + FEATS, UD English EWT", "100%", ["pos_acc", "morph_acc"]),
    ("ner", "entities, Universal NER English EWT", "100%", ["ents_f"]),
    ("ner_25", "entities, Universal NER English EWT", "25%", ["ents_f"]),
    ("ner_10", "entities, Universal NER English EWT", "10%", ["ents_f"]),
)
PEER_COMPONENTS = {
    "tagger": "spaCy tagger",
    "morphologizer": "spaCy morphologizer",
    "ner": "spaCy ner",
    "beam_ner": "spaCy beam_ner",
}


def mcnemar_p(chi2: float) -> float:
    """The p-value of McNemar's chi-squared (1 degree of freedom)."""
    return math.erfc(math.sqrt(chi2 / 2))


def _p(value: float, floor: float = 0.0) -> str:
    """ "p = 0.0123"; "p <= floor" at a bootstrap's smallest p-value (1 / draws)."""
    if floor and value <= floor:
        return f"p <= {floor:g}"
    return "p < 0.0001" if value < 0.0001 else f"p = {value:.4f}"


def _score(system: Dict, key: str) -> str:
    if key == "ents_f":
        return f"{system['ents_f']:.2f} ({system['ents_p']:.1f} / {system['ents_r']:.1f})"
    return f"{system[key]:.2f}"


def _seconds(system: Dict) -> str:
    seconds = (system.get("train_time") or {}).get("train_seconds")
    return "-" if seconds is None else f"{seconds / 60:.1f} min"


def transformer_rows(records: Dict[str, Dict], tasks=TRF_TASKS, compact: bool = False) -> List[str]:
    """One row per (task, train share, score, spaCy system): CRF against spaCy on the encoder."""
    rows = []
    for name, task, share, keys in tasks:
        r = records.get(name)
        if r is None:
            continue
        crf = r["systems"]["crf"]
        for peer, paired in r["paired"].items():
            other = r["systems"][peer]
            if compact and other["component"] == "beam_ner":
                continue
            for key in keys:
                if r["task"] == "ner":
                    test = (
                        f"{paired['delta']:+.2f} [{paired['delta_95_low']:+.2f}, {paired['delta_95_high']:+.2f}], "
                        f"{_p(paired['p_value'], 1 / paired['samples'])}"
                    )
                else:
                    mc = paired[{"tag_acc": "tag_", "pos_acc": "pos_", "morph_acc": "morph"}[key]]
                    test = (
                        f"{crf[key] - other[key]:+.2f}, chi2 = {mc['mcnemar_chi2']:.1f}, "
                        f"{_p(mcnemar_p(mc['mcnemar_chi2']))}"
                    )
                ratio = crf["words_per_second"] / other["words_per_second"]
                cells = [
                    task,
                    share,
                    key.replace("ents_f", "ents_f (P / R)"),
                    f"`{crf['component']}` {_score(crf, key)}",
                    f"{PEER_COMPONENTS.get(other['component'], other['component'])} {_score(other, key)}",
                    test,
                ]
                if not compact:
                    cells += [
                        f"{_seconds(crf)} / {_seconds(other)}",
                        f"{crf['words_per_second']:,} / {other['words_per_second']:,} ({ratio:.2f}x)",
                    ]
                else:
                    cells += [f"{ratio:.2f}x"]
                rows.append("| " + " | ".join(cells) + " |")
    return rows


def _budget(records: Dict[str, Dict]) -> str:
    first = next(iter(records.values()))
    t = first["systems"]["crf"]["training"]
    lr = t["learn_rate"]
    lr_text = (
        f"peak learning rate {lr['initial_rate']:g} after {lr['warmup_steps']} warm-up steps, linear decay"
        if isinstance(lr, dict)
        else f"learning rate {lr}"
    )
    return (
        f"Encoder `{t['encoder']}`; every pipeline {t['max_steps']} steps of `{t['batcher']['@batchers']}` "
        f"size {t['batcher']['size']}, Adam, {lr_text}, seed {t['seed']}; {first['threads']} torch threads."
    )


def transformer(root: Path, compact: bool = False) -> Optional[str]:
    """metrics/trf/{tagger,morph,ner,ner_25,ner_10}.json (benchmarks.transformer_compare):
    the CRF components against spaCy's on one encoder."""
    records = {name: load(root / "metrics" / "trf" / f"{name}.json") for name, *_ in TRF_TASKS}
    records = {name: r for name, r in records.items() if r is not None}
    if not records:
        return None
    if compact:
        lines = [
            "| task | train docs | score | CRF | spaCy | CRF - spaCy, paired test | words/s CRF / spaCy |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines = [
            "| task | train docs | score | CRF | spaCy | CRF - spaCy, paired test | train time CRF / spaCy "
            "| `nlp.pipe` words/s CRF / spaCy |",
            "|---|---|---|---|---|---|---|---|",
        ]
    lines += transformer_rows(records, compact=compact)
    speed_words = {r["speed_words"] for r in records.values()}
    rounds = {len(s.get("words_per_second_runs") or [0]) for r in records.values() for s in r["systems"].values()}
    head = (
        f"{environment_line(*records.values())} {_budget(records)} Dev scores on gold tokens; "
        f"words/s: `nlp.pipe` on the first {min(speed_words):,}+ dev words, the pipelines in turn, "
        f"median of {'/'.join(str(n) for n in sorted(rounds))} rounds. Paired tests: McNemar for tokens, a paired bootstrap over docs (10,000 draws; "
        "difference, 95% interval) for entity F1."
    )
    return head + "\n\n" + "\n".join(lines)


def gpu_kernels(root: Path) -> Optional[str]:
    """metrics/speed/gpu_kernels.json: `python -m benchmarks.gpu --output FILE`."""
    record = load(root / "metrics" / "speed" / "gpu_kernels.json")
    if record is None or not record.get("rows"):
        return None
    versions = record.get("versions", {})
    head = (
        f"{environment_line(record)} CUDA {versions.get('cuda')}, Triton {versions.get('triton')}. "
        f"Medians of {record['repeats']} CUDA-event timed runs."
    )
    return head + "\n\n" + gpu_kernel_table(record["rows"])


def gpu_pipeline(root: Path) -> Optional[str]:
    """metrics/speed/gpu_pipeline.json: `python -m benchmarks.gpu --no-kernels --model ... --output FILE`."""
    record = load(root / "metrics" / "speed" / "gpu_pipeline.json")
    if record is None or not (record.get("nlp_pipe") or record.get("spacy_train")):
        return None
    lines = [
        "| pipeline | `spacy train` steps/s | `nlp.pipe` words/s | vs spaCy's tagger | tag_acc on the GPU |",
        "|---|---|---|---|---|",
    ]
    train, pipe = record.get("spacy_train", {}), record.get("nlp_pipe", {})
    for name in dict.fromkeys([*pipe, *train]):
        steps = f"{train[name]['steps_per_second']:.2f}" if name in train else "-"
        words = f"{pipe[name]['words_per_second']:,}" if name in pipe else "-"
        ratio = f"{pipe[name]['vs_tagger']:.2f}x" if "vs_tagger" in pipe.get(name, {}) else "-"
        acc = f"{100 * pipe[name]['tag_acc']:.2f}" if "tag_acc" in pipe.get(name, {}) else "-"
        label = "spaCy tagger" if name == "tagger" else name
        lines.append(f"| {label} | {steps} | {words} | {ratio} | {acc} |")
    return environment_line(record) + " One CPU thread a process.\n\n" + "\n".join(lines)


def predict_stages_gpu(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/stages_*.json (`python -m benchmarks.gpu_stages ... --output
    FILE`) measured on the GPU (CupyOps): `predict` stage by stage."""
    paths = sorted((root / "metrics" / folder).glob("stages_*.json"))
    records = {path.stem[len("stages_") :]: load(path) for path in paths}
    records = {name: r for name, r in records.items() if r and r.get("ops") == "CupyOps"}
    if not records:
        return None
    lines = [
        "| model | docs, words | tok2vec | + network | decode (Viterbi) | predict | decode share | words/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in records.items():
        ms = r["ms"]
        lines.append(
            f"| `{name}` | {r['n_docs']:,}, {r['n_words']:,} | {ms['tok2vec']:,.0f} ms | {ms['tok2vec + network']:,.0f} ms "
            f"| {ms['decode (Viterbi)']:,.0f} ms | {ms['predict']:,.0f} ms | {ms['decode (Viterbi)'] / ms['predict']:.0%} "
            f"| {r['predict_words_per_second']:,} |"
        )
    return (
        environment_line(*records.values())
        + " One batch of every dev doc, medians of CUDA-synchronised runs.\n\n"
        + "\n".join(lines)
    )


# The plots the tables show (benchmarks.entity_probabilities, benchmarks.reliability_pooled).
IMAGES = (
    "calibration/pr_crossfit_*.png",
    "calibration/pr_folds_*.png",
    "calibration/reliability_folds_*.png",
)


def copy_images(root: Path) -> None:
    """The plots the benchmarks page shows, from metrics/ into docs/images/."""
    images = [path for pattern in IMAGES for path in sorted((root / "metrics").glob(pattern))]
    if images:
        (root / "docs" / "images").mkdir(parents=True, exist_ok=True)
    for image in images:
        target = root / "docs" / "images" / image.name
        if not target.exists() or target.read_bytes() != image.read_bytes():
            shutil.copyfile(image, target)


def _percent(value: Optional[float]) -> str:
    """A share as a percentage with one decimal, "-" for none."""
    return "-" if value is None else f"{100 * value:.1f}"


def settings(root: Path, spine: str) -> str:
    """A component's settings (spacy_crf.components.settings), with their defaults."""
    from spacy_crf.components import settings as declared

    return declared.settings_table(getattr(declared, spine))


def converged(root: Path) -> Optional[str]:
    """benchmarks/runs/converged/*.json (`python -m benchmarks.converged`): the
    transformer comparison at convergence, per task and head."""
    from benchmarks.converged_report import load_runs, table

    folder = root / "benchmarks" / "runs" / "converged"
    rendered = table(folder)
    if rendered is None:
        return None
    records = [record for runs in load_runs(folder).values() for record in runs.values()]
    return environment_line(*records) + "\n\n" + rendered


def converged_summary(root: Path) -> Optional[str]:
    """The README's converged lines: only tasks with 3 converged seeds per
    head ("" where none has them); None without run records (the block is
    left as it is)."""
    from benchmarks.converged_report import summary

    return summary(root / "benchmarks" / "runs" / "converged")


def distillation(root: Path) -> Optional[str]:
    """benchmarks/runs/distillation/*.json (`python -m benchmarks.distillation`):
    teacher, plain and distilled students, per task ("not yet" for a head
    without a record); None without any record (the table is left as it is)."""
    from benchmarks.converged_report import load_runs
    from benchmarks.distillation import table

    folder = root / "benchmarks" / "runs" / "distillation"
    records = [record for runs in load_runs(folder).values() for record in runs.values()] if folder.exists() else []
    if not records:
        return None
    return environment_line(*records) + "\n\n" + table(folder)


def distillation_summary(root: Path) -> Optional[str]:
    """The README's distillation lines: only tasks with the teacher, three
    seeds of each student and the speeds ("" where none has them)."""
    from benchmarks.distillation import summary

    return summary(root / "benchmarks" / "runs" / "distillation")


def distillation_probabilities(root: Path) -> Optional[str]:
    """benchmarks/runs/distillation/probabilities/*.json (`python -m
    benchmarks.distillation probabilities`): the crf_ner heads' ECE and Brier,
    as trained and with the entity temperature."""
    from benchmarks.distillation import probability_table

    return probability_table(root / "benchmarks" / "runs" / "distillation")


def serving(root: Path) -> Optional[str]:
    """benchmarks/runs/serving.json (`python -m benchmarks.serving`): the
    torch-free engine against the torch engine and spaCy's components."""
    import json

    from benchmarks.serving import render_table

    path = root / "benchmarks" / "runs" / "serving.json"
    return render_table(json.loads(path.read_text())) if path.exists() else None


RENDERERS: Dict[str, Callable[[Path], Optional[str]]] = {
    # the components' settings, from their declarations
    "settings-crf_tagger": functools.partial(settings, spine="TAGGER_SETTINGS"),
    "settings-crf_morphologizer": functools.partial(settings, spine="MORPHOLOGIZER_SETTINGS"),
    "settings-crf_ner": functools.partial(settings, spine="ENTITY_RECOGNIZER_SETTINGS"),
    # tags against spaCy and Flair
    "results": results,
    "pipeline-compare-batch-words": functools.partial(pipeline_compare, folder="speed/batch_words"),
    "peers-batch-words": functools.partial(peers, folder="speed/batch_words", rounds=True, against_tagger=True),
    "peers-batch-sizes": peers_batch_sizes,
    # morphology
    "morph": morph,
    "quantize-morph-amd": functools.partial(quantize, folder="speed/amd_morph"),
    "udpipe": udpipe,
    # entities and calibration
    "entity-probabilities-crossfit": functools.partial(entity_probabilities, prefix="crossfit_"),
    "entity-probabilities-folds": functools.partial(entity_probabilities, prefix="folds_"),
    # on a transformer, trained to convergence
    "converged": converged,
    "converged-summary": converged_summary,
    "converged-probabilities": converged_probabilities,
    "distillation": distillation,
    "distillation-summary": distillation_summary,
    "distillation-probabilities": distillation_probabilities,
    "serving": serving,
    # GPU
    "gpu-kernels": gpu_kernels,
    "gpu-pipeline": gpu_pipeline,
    "predict-stages-gpu": predict_stages_gpu,
}


def fill(text: str, name: str, table: str) -> str:
    """The text with the block of marker NAME replaced by the table."""
    if name == "results" and "<!-- results:start -->" in text:
        start, end = "<!-- results:start -->", "<!-- results:end -->"
    else:
        start, end = f"<!-- table:{name}:start -->", f"<!-- table:{name}:end -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{start}\n{table}\n{end}" if table else f"{start}\n{end}", text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument("--check", action="store_true", help="exit 1 if a page would change")
    args = parser.parse_args(argv)
    tables = {name: render(args.root) for name, render in RENDERERS.items()}
    if not args.check:
        copy_images(args.root)
    changed = []
    for page in PAGES:
        path = args.root / page
        if not path.exists():
            continue
        text = path.read_text()
        new = text
        for name, table in tables.items():
            if table is not None:
                new = fill(new, name, table)
        if new != text:
            changed.append(page)
            if not args.check:
                path.write_text(new)
    print(("would change: " if args.check else "updated: ") + (", ".join(changed) or "nothing"))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
