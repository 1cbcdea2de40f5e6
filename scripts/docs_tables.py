"""Fill the tables of README.md and docs/ from the project's own outputs.

    python -m scripts.docs_tables [--root .] [--check]

Each table sits between `<!-- table:NAME:start -->` and `<!-- table:NAME:end -->`
(`<!-- results:start -->` / `<!-- results:end -->` in README.md) and is rendered
from the JSON files that the project's commands write under metrics/ (see
docs/performance.md and docs/accuracy.md for the command behind each). A table
whose outputs are not there is left as it is, so the command can run anywhere
without wiping what was measured elsewhere. Every table opens with the hardware
and versions its outputs recorded. --check exits 1 if a file would change.
"""
import argparse
import collections
import functools
import io
import json
import re
import shutil
import statistics
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from benchmarks.contention import table as contention_table
from benchmarks.embedding import table as embedding_table
from benchmarks.gpu import kernel_table as gpu_kernel_table
from benchmarks.large_labels import table as large_labels_table
from benchmarks.pruned_lattice import table as pruned_lattice_table
from benchmarks.pipeline_compare import TRAINING_UNITS
from benchmarks.quantize import table as quantize_table
from benchmarks.time_to_accuracy import table as time_to_accuracy_table

from .morph_table import treebank_table as morph_treebank_table
from .results_table import is_evaluate_output
from .results_table import main as results_table

PAGES = ["README.md", "docs/performance.md", "docs/accuracy.md"]


def environment_line(*records: dict) -> str:
    """"Measured on ..." from the first record that has an environment."""
    env = next((r["environment"] for r in records if r and r.get("environment")), None)
    if env is None:
        return "Measured on: not recorded."
    flags = f"; {', '.join(env['cpu_flags'])}" if env.get("cpu_flags") else ""
    device = env["gpu"] or f"{env['cpu']} ({env['logical_cpus']} logical CPUs{flags})"
    steady = (" malloc: steady (freed memory kept in the process, `--allocator steady`)."
              if env.get("allocator") == "steady" else "")
    return (
        f"Measured on: {device}; Python {env['python']}, torch {env['torch']}, "
        f"spaCy {env['spacy']}, spacy-crf {env['spacy_crf']}.{steady}"
    )


def load(path: Path) -> Optional[dict]:
    return json.loads(path.read_text()) if path.exists() else None


def raw_text(root: Path, runs: Tuple[Tuple[str, str], ...] = ()) -> Optional[str]:
    """`scripts.raw_text` records (metrics/analysis/FILE), one row each under
    its name: the score on gold sentences, gold words in whole docs, raw
    text, raw text by sentence, and the losses from gold sentences."""
    records = [(name, load(root / "metrics" / "analysis" / file)) for name, file in runs]
    if not records or any(record is None for _, record in records):
        return None
    lines = [
        "| pipeline | gold sentences | gold words, whole docs | raw text | raw text by sentence (sentencizer) "
        "| loss, gold to raw | loss, gold to raw by sentence |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, record in records:
        scores = [record[key] for key in ("gold_sentences", "gold_docs", "raw", "raw_by_sentence")]
        attr = next(iter(scores[0]))
        gold, docs, raw, by_sentence = (score[attr] for score in scores)
        lines.append(f"| {name} | {gold:.2f} | {docs:.2f} | {raw:.2f} | {by_sentence:.2f} "
                     f"| {gold - raw:.2f} | {gold - by_sentence:.2f} |")
    return "\n".join(lines)


def results(root: Path) -> Optional[str]:
    """The results command's table (scripts.results_table)."""
    metrics = root / "metrics"
    # `spacy evaluate` outputs; other benchmarks also write to metrics/ (contention.json)
    if not any(is_evaluate_output(load(path)) for path in metrics.glob("*.json")):
        return None
    out = io.StringIO()
    with redirect_stdout(out):
        results_table(str(metrics))
    speeds = [load(path) for path in sorted(metrics.glob("*-speed.json"))]
    table = drop_column(out.getvalue().strip(), "train time")  # timed on a shared machine: see performance.md
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


def pipeline_speed(root: Path) -> Optional[str]:
    paths = sorted((root / "metrics").glob("*-speed.json"))
    if not paths:
        return None
    records = {path.name[: -len("-speed.json")]: load(path) for path in paths}
    lines = [environment_line(*records.values()), "", "| config | words/s | runs | threads | batch | device |",
             "|---|---|---|---|---|---|"]
    for name, r in records.items():
        runs = ", ".join(f"{x:,}" for x in r["runs"])
        lines.append(f"| {name} | {r['words_per_second']:,} | {runs} | {r['threads']} | {r['batch_size']} | {r['device']} |")
    return "\n".join(lines)


def contention(root: Path) -> Optional[str]:
    record = load(root / "metrics" / "contention.json")
    if record is None:
        return None
    settings = record["settings"]
    head = (
        f"{environment_line(record)} Medians of {settings['repeats']} runs; training: batches of "
        f"{settings['batch_size']} sentences, {settings['updates']} updates a run; `nlp.pipe`: "
        f"{settings['pipe_sentences']} dev sentences, batch 256. In brackets: the ratio to the quiet figure."
    )
    return head + "\n\n" + contention_table(record["results"])


def kernels(root: Path) -> Optional[str]:
    record = load(root / "metrics" / "speed" / "crf_kernels.json")
    if record is None:
        return None
    lines = [
        f"{environment_line(record)} {record['threads']} thread(s), medians of {record['repeats']}, in ms.",
        "",
        "| (B, T, K) | same paths / NLL | Viterbi | pytorch-crf | speed-up | NLL fwd+bwd | pytorch-crf | speed-up | BiLSTM fwd |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        lines.append(
            f"| {tuple(r['shape'])} | {r['same_paths']} / {r['same_nll']} | {r['viterbi_ms']:.2f} "
            f"| {r['torchcrf_viterbi_ms']:.2f} | {r['viterbi_speedup']:.1f}x | {r['nll_fwd_bwd_ms']:.2f} "
            f"| {r['torchcrf_nll_fwd_bwd_ms']:.2f} | {r['nll_speedup']:.1f}x | {r['bilstm_forward_ms']:.1f} |"
        )
    return "\n".join(lines)


def cpu_viterbi(root: Path) -> Optional[str]:
    """metrics/speed/cpu_viterbi*.json: `python -m benchmarks.cpu_viterbi ...`."""
    records = [load(path) for path in sorted((root / "metrics" / "speed").glob("cpu_viterbi*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    first = records[0]
    rows = [row for record in records for row in record["rows"]]
    lines = [
        f"{environment_line(*records)} {first['threads']} thread(s); decoding: medians of {first['repeats']}; "
        f"`nlp.pipe` (batch 256): the variants in turn, medians of {first['repeats']} rounds.",
        "",
        "Viterbi alone, on the scores of one batch of every dev doc:",
        "",
        "| pipeline | quantize | (B, T, K), transitions | same paths / scores | torch | Numba | Numba, packed emissions |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = r["decode_ms"]
        packed = f"{ms['numba, packed']:.1f} ms" if "numba, packed" in ms else "-"
        lines.append(f"| `{r['model']}` | {r['quantize']} | {tuple(r['shape'])}, {r['transitions']} | {r['same_paths']} / {r['same_scores']} "
                     f"| {ms['torch']:.1f} ms | {ms['numba']:.1f} ms ({ms['torch'] / ms['numba']:.1f}x) | {packed} |")
    variants = list(rows[0]["words_per_second"])
    lines += ["", "`nlp.pipe` words/s (quantize: as given), and the share of tokens labelled differently from `torch`:", "",
              "| pipeline | quantize | " + " | ".join(variants) + " | tokens labelled differently |",
              "|---|---|" + "---|" * len(variants) + "---|"]
    for r in rows:
        rate = r["words_per_second"]
        cells = [f"{rate[v]:,.0f}" + ("" if v == variants[0] else f" ({rate[v] / rate[variants[0]]:.2f}x)") for v in variants]
        lines.append(f"| `{r['model']}` | {r['quantize']} | " + " | ".join(cells) + f" | {r['tokens_labelled_differently']:.2%} |")
    return "\n".join(lines)


def factory_defaults(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/factory_defaults*.json: `python -m benchmarks.factory_defaults ...`."""
    paths = sorted((root / "metrics" / folder).glob("factory_defaults*.json"))
    if not paths:
        return None
    records = [load(path) for path in paths]
    lines = [environment_line(*records), "", "| crf_tagger model | crf_tagger words/s | spaCy tagger words/s | ratio (median) | ratios |",
             "|---|---|---|---|---|"]
    for record, r in ((record, row) for record in records for row in record.get("rows", [record])):
        w = r["words_per_second"]
        docs = ", one doc per sentence" if record.get("docs") == "sentences" else ""
        lines.append(f"| {r['crf_model']}{docs} | {w['crf_tagger']:,} | {w['tagger']:,} | {r['ratio_median']:.2f}x "
                     f"| {', '.join(f'{x:.2f}' for x in r['ratios'])} |")
    return "\n".join(lines)


def batch_words(root: Path, folder: str = "speed/batch_words") -> Optional[str]:
    """metrics/FOLDER/batch_words*.json: `python -m benchmarks.batch_words ...`, a table each."""
    records = [load(path) for path in sorted((root / "metrics" / folder).glob("batch_words*.json"))]
    tables = []
    for r in (r for r in records if r):
        memory = all("pass_mb" in row for row in r["rows"])
        lines = [f"{environment_line(r)} {r['threads']} thread(s); {r['docs']:,} docs of one sentence "
                 f"({r['words']:,} words), `nlp.pipe(batch_size={r['batch_size']})`, medians of {r['repeats']} rounds; "
                 f"spaCy's tagger: {r['tagger_words_per_second']:,} words/s.", "",
                 "| `batch_words` | crf_tagger words/s | vs spaCy's tagger, per round: median (range) "
                 "| tokens labelled differently |" + (" peak memory of a pass |" if memory else ""),
                 "|---|---|---|---|" + ("---|" if memory else "")]
        for row in r["rows"]:
            low, high = row["ratio_to_tagger_range"]
            lines.append(f"| {row['batch_words']:,} | {row['words_per_second']:,} | {row['ratio_to_tagger_median']:.2f}x "
                         f"({low:.2f}x-{high:.2f}x) | {row['tokens_labelled_differently']:.2%} |"
                         + (f" {row['pass_mb']:,.0f} MB |" if memory else ""))
        tables.append("\n".join(lines))
    return "\n\n".join(tables) if tables else None


def pipeline_compare(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/pipeline_compare*.json (`python -m benchmarks.pipeline_compare
    ... [--whole-docs]`), a table each."""
    records = [load(path) for path in sorted((root / "metrics" / folder).glob("pipeline_compare*.json"))]
    tables = [pipeline_compare_table(r) for r in records if r]
    return "\n\n".join(tables) if tables else None


def pipeline_compare_table(r: Dict) -> str:
    p, t = r["pipe_words_per_second"], r["train_words_per_second"]
    unit = training_unit(r)
    lines = [f"{environment_line(r)} {r['threads']} thread(s).{' Training: ' + unit + '.' if unit else ''}", "",
             "| pipeline | nlp.pipe words/s | training words/s |", "|---|---|---|"]
    lines += [f"| {name} | {p[name]:,} | {t[name]:,} |" for name in p]
    lines += ["", f"crf_tagger / spaCy tagger: `nlp.pipe` {p['crf_tagger'] / p['spaCy tagger']:.2f}x, training "
              f"{t['crf_tagger'] / t['spaCy tagger']:.2f}x; Viterbi decoding takes "
              f"{100 * r['decode_share_of_encoder']:.1f}% of the encoder's time in `predict`."]
    return "\n".join(lines)


def paired_tests(root: Path) -> Optional[str]:
    """metrics/analysis/paired_A__B.json: `python -m scripts.paired_test A B DEV > FILE`."""
    paths = sorted((root / "metrics" / "analysis").glob("paired_*.json"))
    if not paths:
        return None
    lines = ["| A | B | tokens | A acc | B acc | only A right | only B right | McNemar chi2 |", "|---|---|---|---|---|---|---|---|"]
    for path in paths:
        a, _, b = path.stem[len("paired_"):].partition("__")
        r = load(path)
        lines.append(f"| {a} | {b} | {r['tokens']:,} | {r['acc_a']:.2f} | {r['acc_b']:.2f} | {r['only_a_right']} "
                     f"| {r['only_b_right']} | {r['mcnemar_chi2']:.2f} |")
    return "\n".join(lines)


def accuracy_by_frequency(root: Path) -> Optional[str]:
    """metrics/analysis/frequency_NAME.json: `python -m scripts.accuracy_by_frequency ... > FILE`."""
    paths = sorted((root / "metrics" / "analysis").glob("frequency_*.json"))
    if not paths:
        return None
    lines = []
    for path in paths:
        r = load(path)
        lines += [f"`{path.stem[len('frequency_'):]}` ({r['attr']}), {r['tokens']:,} dev tokens, accuracy {r['accuracy']:.2f}:", "",
                  "| times seen in training | share of tokens | accuracy | errors |", "|---|---|---|---|"]
        lines += [f"| {name} | {b['share']:.1f}% | {b['accuracy']:.2f} | {b['errors']} |" for name, b in r["by_training_count"].items()]
        top = ", ".join(f"{pair} ({n})" for pair, n in r["confusions"].items())
        lines += ["", f"Most frequent confusions (gold -> predicted): {top}.", ""]
    return "\n".join(lines).strip()


def morph_errors(root: Path, features: int = 9) -> Optional[str]:
    """metrics/analysis/morph_errors_NAME.json: `python -m scripts.morph_errors ... --output FILE`,
    a row each, with the errors of the features most often wrong over all of them."""
    records = [load(path) for path in sorted((root / "metrics" / "analysis").glob("morph_errors_*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    totals: collections.Counter = collections.Counter()
    for r in records:
        totals.update(r["per_feature"])
    names = [name for name, _ in totals.most_common(features)]
    lines = ["| model | FEATS | FEATS errors | with a UPOS error | with a tag error | FEATS-only | "
             + " | ".join(names) + " |", "|---|---|---|---|---|---|" + "---|" * len(names)]
    for r in records:
        with_tag = "-" if r["with_tag_error"] is None else f"{r['with_tag_error']:,}"
        lines.append(f"| `{r['model']}` | {r['feats_accuracy']:.2f} | {r['feats_errors']:,} | {r['with_pos_error']:,} "
                     f"| {with_tag} | {r['feats_only']:,} | "
                     + " | ".join(f"{r['per_feature'].get(name, 0):,}" for name in names) + " |")
    only = ["- `{}`: {}.".format(r["model"], ", ".join(f"{error} ({n})" for error, n in r["feats_only_errors"].items()))
            for r in records]
    return "\n".join(lines + ["", "FEATS-only: the FEATS are wrong, the UPOS and the tag right (the UPOS alone "
                              "for a model without tags). The most frequent of them, by word:", ""] + only)


def decoding(root: Path) -> Optional[str]:
    """metrics/analysis/decoding_NAME.json: `python -m scripts.decoding_ablation ... > FILE`."""
    paths = sorted((root / "metrics" / "analysis").glob("decoding_*.json"))
    if not paths:
        return None
    records = {path.stem[len("decoding_"):]: load(path) for path in paths}
    methods = [k for k in next(iter(records.values())) if k not in ("model", "attr", "tokens")]
    lines = ["| model | attr | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for name, r in records.items():
        lines.append(f"| {name} | {r['attr']} | " + " | ".join(f"{r[m]:.2f}" for m in methods) + " |")
    return "\n".join(lines)


def large_labels(root: Path, name: str = "large_labels.json") -> Optional[str]:
    record = load(root / "metrics" / "speed" / name)
    if record is None:
        return None
    head = (f"{environment_line(record)} {record['batch']} sequences of up to {record['length']} tokens, "
            f"{record['threads']} thread(s), medians of {record['repeats']}; each cell: time, and the peak memory "
            "the operation added to a fresh process.")
    return head + "\n\n" + large_labels_table(record["rows"])


def large_labels_numba(
    root: Path,
    folder: str = "speed",
    files: Tuple[str, str] = ("large_labels_numba_baseline.json", "large_labels_numba.json"),
    titles: Tuple[str, str] = (
        "torch's code (`--kernels torch`)", "The code the pipeline runs (`--kernels auto`: Numba's Viterbi)"),
) -> Optional[str]:
    """metrics/FOLDER/FILES: two `benchmarks.large_labels` runs measured one
    after the other (by default torch's code, `--kernels torch`, and the code
    the pipeline runs, Numba's Viterbi), one table each under its title."""
    speed = root / "metrics" / folder
    runs = [load(speed / name) for name in files]
    if any(run is None for run in runs):
        return None
    first = runs[0]
    head = (f"{environment_line(*runs)} {first['batch']} sequences of up to {first['length']} tokens, "
            f"{first['threads']} thread(s), medians of {first['repeats']}; each cell: time, and the peak memory "
            "the operation added to a fresh process (with Numba, that includes loading Numba and its compiled code).")
    return (head + f"\n\n{titles[0]}:\n\n" + large_labels_table(runs[0]["rows"])
            + f"\n\n{titles[1]}:\n\n" + large_labels_table(runs[1]["rows"]))


def pruned_lattice(root: Path, name: str = "tr_imst") -> Optional[str]:
    """metrics/speed/pruned_lattice/NAME.json: `benchmarks.pruned_lattice`."""
    record = load(root / "metrics" / "speed" / "pruned_lattice" / f"{name}.json")
    if record is None:
        return None
    head = (f"{environment_line(record)} {record['sequences']:,} dev sentences, {record['tokens']:,} words, "
            f"{record['labels']:,} bundles; {record['threads']} thread(s), medians of {record['repeats']}.")
    return head + "\n\n" + pruned_lattice_table(record)


def large_labels_gpu(root: Path) -> Optional[str]:
    """metrics/speed/large_labels_gpu.json (`--device cuda --kernels torch`: torch's
    code for every operation) and large_labels_gpu_kernel*.json (`--device cuda`:
    the code the pipeline runs, any subset of the operations), one table each."""
    speed = root / "metrics" / "speed"
    torch_run = load(speed / "large_labels_gpu.json")
    kernel_runs = [load(path) for path in sorted(speed.glob("large_labels_gpu_kernel*.json"))]
    if torch_run is None or not kernel_runs:
        return None
    head = (f"{environment_line(torch_run)} {torch_run['batch']} sequences of up to {torch_run['length']} tokens, "
            f"medians of {torch_run['repeats']} CUDA-event timed runs; each cell: time, and the device memory the "
            "operation added to a fresh process.")
    kernel_rows = [row for run in kernel_runs for row in run["rows"]]
    return (head + "\n\ntorch's code:\n\n" + large_labels_table(torch_run["rows"])
            + "\n\nThe code the pipeline runs (`--kernels auto`):\n\n" + large_labels_table(kernel_rows))


def gpu_kernels(root: Path) -> Optional[str]:
    """metrics/speed/gpu_kernels.json: `python -m benchmarks.gpu --output FILE`."""
    record = load(root / "metrics" / "speed" / "gpu_kernels.json")
    if record is None or not record.get("rows"):
        return None
    versions = record.get("versions", {})
    head = (f"{environment_line(record)} CUDA {versions.get('cuda')}, Triton {versions.get('triton')}. "
            f"Medians of {record['repeats']} CUDA-event timed runs.")
    return head + "\n\n" + gpu_kernel_table(record["rows"])


def gpu_pipeline(root: Path) -> Optional[str]:
    """metrics/speed/gpu_pipeline.json: `python -m benchmarks.gpu --no-kernels --model ... --output FILE`."""
    record = load(root / "metrics" / "speed" / "gpu_pipeline.json")
    if record is None or not (record.get("nlp_pipe") or record.get("spacy_train")):
        return None
    lines = ["| pipeline | `spacy train` steps/s | `nlp.pipe` words/s | vs spaCy's tagger | tag_acc on the GPU |",
             "|---|---|---|---|---|"]
    train, pipe = record.get("spacy_train", {}), record.get("nlp_pipe", {})
    for name in dict.fromkeys([*pipe, *train]):
        steps = f"{train[name]['steps_per_second']:.2f}" if name in train else "-"
        words = f"{pipe[name]['words_per_second']:,}" if name in pipe else "-"
        ratio = f"{pipe[name]['vs_tagger']:.2f}x" if "vs_tagger" in pipe.get(name, {}) else "-"
        acc = f"{100 * pipe[name]['tag_acc']:.2f}" if "tag_acc" in pipe.get(name, {}) else "-"
        label = "spaCy tagger" if name == "tagger" else name
        lines.append(f"| {label} | {steps} | {words} | {ratio} | {acc} |")
    return environment_line(record) + " One CPU thread a process.\n\n" + "\n".join(lines)


def gpu_before_after(root: Path, folder: str = "speed/gpu_h200") -> Optional[str]:
    """metrics/FOLDER/gpu_pipeline_init_N.json (`bash benchmarks/gpu_check.sh OUT BEFORE` with
    ROUNDS=N): nlp.pipe words/s on the GPU of this code, BEFORE's code and spaCy's tagger, per round."""
    records = load_rounds(root / "metrics" / folder, "gpu_pipeline_init")
    rounds = [r["nlp_pipe"] for r in records if r and "crf_tagger (before)" in r.get("nlp_pipe", {})]
    if not rounds:
        return None
    lines = ["| round | this code | before | this / before | spaCy's tagger |", "|---|---|---|---|---|"]
    runs: Dict[str, List[int]] = {"crf_tagger": [], "crf_tagger (before)": [], "tagger": []}
    for number, pipe in enumerate(rounds, 1):
        now, before, tagger = (pipe[name]["words_per_second"] for name in runs)
        lines.append(f"| {number} | {now:,} | {before:,} | {now / before:.2f}x | {tagger:,} |")
        for name in runs:
            runs[name].extend(pipe[name]["runs"])
    now, before, tagger = (int(statistics.median(values)) for values in runs.values())
    lines.append(f"| all {len(runs['tagger'])} runs | {now:,} | {before:,} | {now / before:.2f}x | {tagger:,} |")
    repeats = len(rounds[0]["tagger"]["runs"])
    head = (f"{environment_line(*(r for pipe in rounds for r in pipe.values()))} `nlp.pipe` words/s, batch 256, "
            f"one CPU thread a process; each round the median of {repeats} runs, the three in turn.")
    return head + "\n\n" + "\n".join(lines)


def cpu_before_after(root: Path, folder: str = "speed/composed_addmm") -> Optional[str]:
    """metrics/FOLDER/{before,after,baseline}_N.json (`bash benchmarks/cpu_before_after.sh`):
    nlp.pipe words/s on the CPU of one pipeline with an older and with this code, and of a
    baseline pipeline, one process each, in turn, per round."""
    folder_path = root / "metrics" / folder
    rounds = {kind: load_rounds(folder_path, kind) for kind in ("after", "before", "baseline")}
    n = min(len(records) for records in rounds.values())
    if not n:
        return None
    rates = {kind: [r["words_per_second"] for r in records[:n]] for kind, records in rounds.items()}
    lines = ["| round | this code | before | this / before | baseline | this / baseline |",
             "|---|---|---|---|---|---|"]
    for i in range(n):
        now, before, base = (rates[kind][i] for kind in ("after", "before", "baseline"))
        lines.append(f"| {i + 1} | {now:,} | {before:,} | {now / before:.2f}x | {base:,} | {now / base:.2f}x |")
    now, before, base = (statistics.median(rates[kind]) for kind in ("after", "before", "baseline"))
    ratio = statistics.median(a / b for a, b in zip(rates["after"], rates["before"]))
    to_base = statistics.median(a / b for a, b in zip(rates["after"], rates["baseline"]))
    lines.append(f"| median | {now:,.0f} | {before:,.0f} | {ratio:.2f}x | {base:,.0f} | {to_base:.2f}x |")
    first = rounds["after"][0]
    head = (f"{environment_line(*(r for records in rounds.values() for r in records[:n]))} `nlp.pipe` words/s, "
            f"batch {first['batch_size']}, {first['threads']} thread, one process a pipeline; each round the "
            f"median of {len(first['runs'])} runs, the three in turn; the last row the medians of the rounds "
            "(ratios: of the per-round ratios).")
    return head + "\n\n" + "\n".join(lines)


def round_number(path: Path) -> int:
    """The round N of a file named ..._N.json (so that round 10 sorts after round 2)."""
    return int(path.stem.rsplit("_", 1)[1])


def load_rounds(folder: Path, prefix: str) -> List[Optional[dict]]:
    """folder/PREFIX_N.json for every round N, in the order of N."""
    return [load(path) for path in sorted(folder.glob(f"{prefix}_[0-9]*.json"), key=round_number)]


def gpu_emissions(root: Path, folder: str = "speed/gpu_h200_composed") -> Optional[str]:
    """metrics/FOLDER/stages_gpu_tr_{cpu_morph,cpu_morph_full}_N.json (`benchmarks.gpu_stages`) and
    train_steps_gpu_tr_*_N.json (`benchmarks.train_steps`): configs/cpu_morph.cfg with composed and
    with full emissions on the GPU, in turn, per round."""
    folder_path = root / "metrics" / folder
    names = {"cpu_morph": "composed", "cpu_morph_full": "full"}
    stages = {kind: load_rounds(folder_path, f"stages_gpu_tr_{name}") for name, kind in names.items()}
    if not all(stages.values()):
        return None
    lines = ["| emissions | network (ms), per round | median decode (ms) | predict (ms), per round | median predict | median words/s |",
             "|---|---|---|---|---|---|"]
    for kind, records in stages.items():
        network = [r["ms"]["tok2vec + network"] - r["ms"]["tok2vec"] for r in records]
        predict = [r["ms"]["predict"] for r in records]
        decode = statistics.median(r["ms"]["decode (Viterbi)"] for r in records)
        words = int(statistics.median(r["predict_words_per_second"] for r in records))
        lines.append(f"| {kind} | {', '.join(f'{v:.1f}' for v in network)} | {decode:.1f} "
                     f"| {', '.join(f'{v:.1f}' for v in predict)} | {statistics.median(predict):.1f} | {words:,} |")
    first = stages["composed"][0]
    parts = [f"{environment_line(first)} Turkish IMST dev ({first['n_docs']} docs, {first['n_words']:,} words) as one "
             f"batch, freshly initialized networks; each cell the median of CUDA-synchronised runs.", "\n".join(lines)]
    steps = {kind: load_rounds(folder_path, f"train_steps_gpu_tr_{name}") for name, kind in names.items()}
    if all(steps.values()):
        rows = ["| emissions | `spacy train` steps/s, per round | median |", "|---|---|---|"]
        for kind, records in steps.items():
            values = [r["steps_per_second"] for r in records]
            rows.append(f"| {kind} | {', '.join(f'{v:.1f}' for v in values)} | {statistics.median(values):.1f} |")
        parts += [f"`spacy train` on Turkish IMST train, {steps['composed'][0]['steps']} steps timed after a warm-up, "
                  "the two configs in turn:", "\n".join(rows)]
    return "\n\n".join(parts)


def lstm_cpu(root: Path, folder: str = "speed/buckets") -> Optional[str]:
    """metrics/FOLDER/lstm_cpu_*.json (`python -m benchmarks.lstm_cpu ... --output FILE`): the
    network's forward (and backward) with the BiLSTM packed and bucketed, then nlp.pipe both ways."""
    records = {path.stem[len("lstm_cpu_"):]: load(path) for path in sorted((root / "metrics" / folder).glob("lstm_cpu_*.json"))}
    if not records:
        return None
    first = next(iter(records.values()))
    lines = ["| corpus | batch | rows, tokens (longest) | packed | bucketed | speedup |", "|---|---|---|---|---|---|"]
    for name, record in records.items():
        for case in record["cases"]:
            bucketed = next(key for key in case["ms"] if key != "packed")
            lines.append(f"| {name} | {case['case']} | {case['rows']}, {case['tokens']:,} ({case['longest']}) "
                         f"| {case['ms']['packed']:,.1f} ms | {case['ms'][bucketed]:,.1f} ms | {case['speedup'][bucketed]:.2f}x |")
    parts = [f"{environment_line(first)} {first['threads']} thread(s); BiLSTM {first['inputs']} -> 2 x {first['hidden']}, "
             f"depth {first['depth']}; the two ways in turn, medians of {first['repeats']}.", "\n".join(lines)]
    pipes = [p for record in records.values() for p in record.get("pipelines", [])]
    if pipes:
        rows = ["| pipeline | quantize | packed | bucketed | speedup | tokens labelled differently |",
                "|---|---|---|---|---|---|"]
        for p in pipes:
            words = p["words_per_second"]
            rows.append(f"| `{p['model']}` | {p['quantize']} | {words['packed']:,.0f} | {words['buckets']:,.0f} "
                        f"| {p['speedup']:.2f}x | {p['tokens_labelled_differently']:.3%} |")
        parts += ["`nlp.pipe` words/s of the dev docs (batch 256), the two ways in turn:", "\n".join(rows)]
    return "\n\n".join(parts)


def train_steps_before_after(root: Path, folder: str = "speed/buckets") -> Optional[str]:
    """metrics/FOLDER/train_steps_{now,before}_N.json (`python -m benchmarks.train_steps ...`, this
    code and an older checkout's in turn): `spacy train` steps/s and words/s per round."""
    folder_path = root / "metrics" / folder
    rounds = sorted({round_number(path) for path in folder_path.glob("train_steps_now_[0-9]*.json")})
    pairs = [(load(folder_path / f"train_steps_now_{n}.json"), load(folder_path / f"train_steps_before_{n}.json"))
             for n in rounds]
    pairs = [(now, before) for now, before in pairs if now and before]
    if not pairs:
        return None
    lines = ["| round | steps | this code: steps/s, words/s | before: steps/s, words/s | this / before |",
             "|---|---|---|---|---|"]
    for number, (now, before) in enumerate(pairs, 1):
        lines.append(f"| {number} | {now['steps']} | {now['steps_per_second']:.2f}, {now['words_per_second']:,} "
                     f"| {before['steps_per_second']:.2f}, {before['words_per_second']:,} "
                     f"| {now['steps_per_second'] / before['steps_per_second']:.2f}x |")
    return environment_line(*(r for pair in pairs for r in pair)) + " One thread; `spacy train` after its first steps.\n\n" + "\n".join(lines)


def morph(root: Path) -> Optional[str]:
    """The morph workflow's tables, one per treebank (scripts.morph_table)."""
    metrics = root / "metrics"
    folders = sorted(p for p in (metrics / "morph").glob("*") if p.is_dir())
    if not folders:
        return None
    speeds = [load(path) for folder in folders for path in sorted(folder.glob("*-speed.json"))]
    parts = [environment_line(*speeds) + " Words/s: `nlp.pipe` of the dev words, one thread; train time: "
             "`spacy train` wall time, one thread, never beside another training (lighter work, such as tests, "
             "ran on the second core)."]
    for folder in folders:
        parts.append("\n".join(morph_treebank_table(metrics, folder.name)))
    return "\n\n".join(parts)


def udpipe(root: Path) -> Optional[str]:
    """metrics/peers/udpipe_*.json (`python -m benchmarks.udpipe`): UDPipe 1's
    tagger trained and scored on each treebank's train and dev files."""
    records = [load(path) for path in sorted((root / "metrics" / "peers").glob("udpipe_*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    lines = ["| treebank | system | tagger options | UPOS | UFeats | UPOS+FEATS | AllTags | train time | words/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['treebank']} | {r['system']} | {r['tagger_options']} | {r['upos']:.2f} | {r['ufeats']:.2f} "
                     f"| {r['upos_feats']:.2f} | {r['alltags']:.2f} | {r['train_minutes']} min | {r['words_per_second']:,} |")
    head = (f"{environment_line(*records)} Dev words (gold tokenization), the dev file as UDPipe's heldout data; "
            "train time: UDPipe's trainer, one thread; words/s: its tagging of the dev words, one thread.")
    return head + "\n\n" + "\n".join(lines)


def rejected_spans(root: Path) -> Optional[str]:
    """metrics/ner/rejected_spans*.json: `python -m scripts.rejected_spans ...`, one
    table per run (from scratch, going on from the weak model)."""
    records = [load(path) for path in sorted((root / "metrics" / "ner").glob("rejected_spans*.json"))]
    records = [r for r in records if r is not None]
    if not records:
        return None
    return "\n\n".join(_rejected_spans_run(r) for r in records)


def _rejected_spans_run(r: Dict[str, Any]) -> str:
    """One run of the rejected-spans experiment: its setup, arms and gains."""
    seeds = r["seeds"]
    training = (f"every arm goes on training the weak model for {r['steps']:,} more steps"
                if r.get("start") == "weak" else f"every arm trains a new model for {r['steps']:,} steps")
    per_seed = f", once per seed ({', '.join(map(str, seeds))}): the means of the seeds" if len(seeds) > 1 else ""
    head = (
        f"`{r['config']}`; {r['annotated_docs']:,} of {r['train_docs']:,} train docs annotated fully; the weak "
        f"model ({r['weak_steps']:,} steps on them) scores {r['weak_model']['ents_f']:.2f} F1 on dev and "
        f"proposes entities on the other {r['answered_docs']:,} docs (which hold "
        f"{r['gold_entities_in_answered_docs']:,} gold entities): the annotator accepts {r['accepted_spans']:,} "
        f"and rejects {r['rejected_spans']:,}; {training}{per_seed}."
    )
    labels = {
        "annotated": "annotated docs only (the others unannotated)",
        "rejected": "annotated docs + the others' rejected spans",
        "accepted": "annotated docs + the others' accepted spans",
        "accepted+rejected": "annotated docs + the others' accepted and rejected spans",
    }
    last = r.get("arms_last")
    lines = ["| training data | ents_p | ents_r | ents_f |" + (" ents_f, last model |" if last else ""),
             "|---|---|---|---|" + ("---|" if last else "")]
    for name, scores in r["arms"].items():
        row = f"| {labels[name]} | {scores['ents_p']:.2f} | {scores['ents_r']:.2f} | {scores['ents_f']:.2f} |"
        lines.append(row + (f" {last[name]['ents_f']:.2f} |" if last else ""))
    names = {"rejections_beside_accepts": "the rejections beside the accepted spans",
             "rejections_alone": "the rejections as the only answers"}
    notes = []
    for name, gain in r["ents_f_gain"].items():
        note = f"F1 gain from {names[name]}: {gain['mean']:+.2f}"
        if len(gain["per_seed"]) > 1:
            note += " (seed by seed " + ", ".join(f"{g:+.2f}" for g in gain["per_seed"]) + ")"
        last_gain = (r.get("ents_f_gain_last") or {}).get(name)
        if last_gain:
            note += f"; of the last models {last_gain['mean']:+.2f}"
        notes.append(note + ".")
    return head + " `ents_f`: the model `spacy train` kept for its dev score (`model-best`).\n\n" + "\n".join(lines) \
        + "\n\n" + "\n".join(notes)


def calibration(root: Path) -> Optional[str]:
    """metrics/calibration/reliability_*.json: the project's `calibrate` command."""
    records = {path.stem[len("reliability_"):]: load(path)
               for path in sorted((root / "metrics" / "calibration").glob("reliability_*.json"))}
    if not records:
        return None
    lines = ["| model | probabilities | measured on | n | tau | ECE before | ECE after | Brier before | Brier after "
             "| precision of p >= 0.9 (n), after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in records.items():
        for kind, label in (("tokens", "token marginals (predicted label)"), ("entities", "entity posteriors")):
            if kind not in r:
                continue
            before, after = r[kind]["before"], r[kind]["after"]
            at = (after.get("precision_at") or {}).get("0.9") or {}
            high = "-" if at.get("precision") is None else f"{at['precision']:.4f} ({at['n']:,})"
            lines.append(
                f"| `{name}` | {label} | {Path(r['dev']).name} | {after['n']:,} | {after['temperature']:.2f} "
                f"| {before['ece']:.4f} | {after['ece']:.4f} | {before['brier']:.4f} | {after['brier']:.4f} | {high} |"
            )
    images = [f"![reliability diagram of {name}](images/reliability_{name}.png)" for name in records
              if (root / "metrics" / "calibration" / f"reliability_{name}.png").exists()]
    return "ECE: 15 equal-width bins.\n\n" + "\n".join(lines) + ("\n\n" + "\n".join(images) if images else "")


def time_to_accuracy(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/time_to_accuracy.json: `python -m benchmarks.time_to_accuracy ...`, with
    its plot (metrics/FOLDER/time_to_accuracy*.png, copied to docs/images/)."""
    record = load(root / "metrics" / folder / "time_to_accuracy.json")
    if record is None:
        return None
    head = (f"{environment_line(record)} `spacy train` wall time, start-up and evaluations included, "
            f"{record['threads']} thread(s), one training at a time; dev `{record['score']}`.")
    images = sorted((root / "metrics" / folder).glob("time_to_accuracy*.png"))
    plot = f"\n\n![dev score against wall time](images/{images[0].name})" if images else ""
    return head + "\n\n" + time_to_accuracy_table(record) + plot


def schedule_seeds(root: Path) -> Optional[str]:
    """metrics/speed/tta_*.json: more seeds of the schedules, `python -m
    benchmarks.time_to_accuracy NAME=CONFIG,...,system.seed=N ... --output
    metrics/speed/tta_NAME.json`; scores only (these runs were not timed alone)."""
    records = [load(path) for path in sorted((root / "metrics" / "speed").glob("tta_*.json"))]
    runs = [(name, run, r) for r in records if r for name, run in r["runs"].items() if run.get("config")]
    if not runs:
        return None
    lines = ["| run | settings | final | best |", "|---|---|---|---|"]
    for name, run, _ in sorted(runs, key=lambda item: item[0]):
        settings = " ".join(run.get("args") or []) or "as in the config"
        final, best = ("-" if run.get(key) is None else f"{run[key]:.2f}" for key in ("final", "best"))
        lines.append(f"| {name} | `{Path(run['config']).name}` {settings} | {final} | {best} |")
    first = runs[0][2]
    return (f"{environment_line(*[r for _, _, r in runs])} `spacy train`, {first['threads']} thread(s); "
            f"dev `{first['score']}`.\n\n" + "\n".join(lines))


def embedding(root: Path) -> Optional[str]:
    """metrics/speed/embedding*.json: `python -m benchmarks.embedding ...`."""
    records = [load(path) for path in sorted((root / "metrics" / "speed").glob("embedding*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    first = records[0]
    head = f"{environment_line(*records)} {first['threads']} thread(s), the variants in turn, medians of {first['repeats']}."
    return head + "\n\n" + "\n\n".join(embedding_table(r) for r in records)


def quantize(root: Path, folder: str = "speed") -> Optional[str]:
    """metrics/FOLDER/quantize*.json: `python -m benchmarks.quantize ...`, a
    table per trained pipeline."""
    records = [load(path) for path in sorted((root / "metrics" / folder).glob("quantize*.json"))]
    records = [r for r in records if r]
    if not records:
        return None
    first = records[0]
    head = (f"{environment_line(*records)} {first['threads']} thread(s), the pipelines in turn, medians of "
            f"{first['repeats']}; dev score on the corpus' sentences (`spacy evaluate --gold-preproc`).")
    parts = [f"`{r['crf_model']}` against `{r['baseline_model']}`:\n\n{quantize_table(r)}" for r in records]
    return head + "\n\n" + "\n\n".join(parts)


def training_unit(compare: Dict) -> str:
    """What pipeline_compare trained on, from its record ("" for a record
    that predates the field)."""
    units = set((compare.get("train_examples") or {}).values())
    if units == {TRAINING_UNITS[True]}:
        return "one training sentence per example, on its gold tokens, as `spacy train` reads them for both configs"
    if units == {TRAINING_UNITS[False]}:
        return "the training corpus' docs of 10 sentences, through spaCy's tokenizer"
    return ", ".join(sorted(units))


def round_ratios(ours: List[float], theirs: List[float]) -> List[float]:
    """The per-round ratios of two systems timed in turn, sorted."""
    return sorted(a / b for a, b in zip(ours, theirs, strict=True))


def ratio_cell(ratios: List[float], digits: int) -> str:
    """"median (lowest-highest)" of sorted ratios."""
    return f"{statistics.median(ratios):.{digits}f}x ({ratios[0]:.{digits}f}x-{ratios[-1]:.{digits}f}x)"


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
    names = {"crf_tagger": "crf_tagger", "crf_tagger_int8": "crf_tagger, quantize int8",
             "crf_tagger_bf16": "crf_tagger, quantize bf16", "spacy_tagger": "spaCy tagger", "flair": "Flair",
             "crf_tagger_fast": "crf_tagger `cpu_fast.cfg`",
             "crf_tagger_fast_int8": "crf_tagger `cpu_fast.cfg`, quantize int8",
             "crf_tagger_batch_words_0": "crf_tagger, batch_words 0",
             "crf_tagger_int8_batch_words_0": "crf_tagger, quantize int8, batch_words 0"}
    sides = flair.get("side_by_side") or {"flair": {"words_per_second": flair["pipe_words_per_second"],
                                                    "dev_accuracy": flair["dev_accuracy"]}}
    base = sides["flair"]
    per_round = "| inference vs Flair, per round: median (range) " if rounds else ""
    tagger_runs = (sides.get("spacy_tagger") or {}).get("runs") if against_tagger else None
    per_round += "| vs spaCy's tagger, per round: median (range) " if tagger_runs else ""
    lines = [f"| system | dev accuracy | inference words/s | vs Flair {per_round}| training words/s | vs Flair |",
             "|---|---|---|---|---|---|" + ("---|" if rounds else "") + ("---|" if tagger_runs else "")]
    for name, side in sides.items():
        label = names.get(name, name)
        train = trained.get(label) if name != "flair" else trained["flair"]
        train_cells = (f"{train:,.0f} | {train / trained['flair']:.1f}x" if train else "- | -")
        round_cell = ""
        if rounds and side.get("runs") and base.get("runs"):
            round_cell = f"| {ratio_cell(round_ratios(side['runs'], base['runs']), 1)} "
        elif rounds:
            round_cell = "| - "
        if tagger_runs:
            round_cell += f"| {ratio_cell(round_ratios(side['runs'], tagger_runs), 2)} " if side.get("runs") else "| - "
        lines.append(f"| {label} | {side['dev_accuracy']:.2f} | {side['words_per_second']:,.0f} "
                     f"| {side['words_per_second'] / base['words_per_second']:.1f}x {round_cell}| {train_cells} |")
    s = flair["settings"]
    head = (f"{environment_line(flair)} {flair['settings_text']}; {flair['epochs_done']} epoch{'s' if flair['epochs_done'] != 1 else ''} "
            f"({flair['seconds'] / 60:.0f} min{', stopped by --max-minutes' if flair['stopped_early'] else ''}). "
            f"Dev accuracy: {s['column'].upper()} on gold tokens. Inference: one doc per sentence, batch "
            f"{s['predict_batch_size']}, one thread, the systems in turn, medians of {s['repeats']}. Training words/s: "
            f"Flair's inside its epochs"
            + (f"; crf_tagger's and spaCy's from `pipeline_compare` (`nlp.update`{', ' + unit if unit else ''})."
               if compare else " (the others' were not measured with these runs)."))
    return head + "\n\n" + "\n".join(lines)


BATCH_SIZE_FOLDERS = ("speed/batch_words_16", "speed/batch_words_32", "speed/batch_words_64", "speed/batch_words",
                      "speed/batch_words_2048")


def peers_batch_sizes(root: Path, folders: Tuple[str, ...] = BATCH_SIZE_FOLDERS) -> Optional[str]:
    """metrics/FOLDER/flair.json of `benchmarks.peers` runs at several
    `--batch-size` (Flair's predict mini-batch and nlp.pipe's batch_size), a
    row each: every system's words/s and the median of its per-round ratios to
    Flair; crf_tagger's per-round ratio to spaCy's tagger."""
    records = [r for r in (load(root / "metrics" / folder / "flair.json") for folder in folders) if r]
    if not records:
        return None
    systems = [("crf_tagger", "crf_tagger"), ("crf_tagger_batch_words_0", "crf_tagger, batch_words 0"),
               ("crf_tagger_int8", "crf_tagger int8"), ("crf_tagger_int8_batch_words_0", "crf_tagger int8, batch_words 0"),
               ("spacy_tagger", "spaCy tagger")]

    def per_round(ours: Dict, theirs: Dict) -> float:
        return statistics.median(round_ratios(ours["runs"], theirs["runs"]))

    lines = [f"{environment_line(records[0])} One doc per sentence of EWT dev, one thread, the systems in turn, "
             f"medians of {records[0]['settings']['repeats']} rounds; in brackets the median of the per-round ratios to Flair.", "",
             "| batch size | Flair | " + " | ".join(label for _, label in systems) + " | crf_tagger / spaCy tagger, per round |",
             "|---|---|" + "---|" * len(systems) + "---|"]
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


def _measured_on(record: dict) -> Tuple[str, str]:
    """The docs a record of scripts.entity_probabilities measured, and its
    temperatures: one pipeline, or the pairs it pooled (--and)."""
    pairs = record.get("pairs") or [record]
    where = " + ".join(Path(pair["dev"]).name for pair in pairs)
    taus = ", ".join(f"{pair['temperature']:.2f}" for pair in pairs if pair.get("temperature") is not None)
    return where, taus


def entity_probabilities(root: Path, prefix: str = "entities_") -> Optional[str]:
    """metrics/calibration/entities_*.json: the project's `entity-probabilities`
    command; prefix "crossfit_": the pooled measurements (`--and`), each dev
    half measured by the pipeline calibrated on the other; prefix "folds_":
    each train fold measured by the pipeline trained on the other folds."""
    paths = sorted((root / "metrics" / "calibration").glob(f"{prefix}*.json"))
    records = {path.stem[len(prefix):]: load(path) for path in paths}
    # the precision/recall plot of a record: pr_NAME.png (entities_), pr_crossfit_NAME.png
    plots = {path.stem[len(prefix):]: "pr_" + path.stem.removeprefix("entities_") + ".png" for path in paths}
    if not records:
        return None
    lines = ["| model | system | probabilities | measured on | n | ECE | ECE of sampling alone | Brier "
             "| precision of p >= 0.9 (n) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in records.items():
        e = r["entities"]
        where, taus = _measured_on(r)
        kind = (f"exact posteriors, tau = {taus}" if r["system"] == "crf_tagger"
                else f"beam scores (width {(r.get('beam') or {}).get('beam_width', '?')})")
        at = (e.get("precision_at") or {}).get("0.9") or {}
        high = "-" if at.get("precision") is None else f"{at['precision']:.4f} ({at['n']:,})"
        floor = "-" if e.get("ece_sampling") is None else f"{e['ece_sampling']:.4f}"
        lines.append(f"| `{name}` | {r['system']} | {kind} | {where} | {e['n']:,} | {e['ece']:.4f} "
                     f"| {floor} | {e['brier']:.4f} | {high} |")
    shown = [0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99]
    curve = ["| t | " + " | ".join(f"`{name}` P / R / F1" for name in records) + " |",
             "|---|" + "---|" * len(records)]
    for t in shown:
        cells = []
        for r in records.values():
            row = next((x for x in r["thresholds"] if abs(x["threshold"] - t) < 1e-9), None)
            if row is None:
                cells.append("-")
                continue
            fmt = lambda v: "-" if v is None else f"{100 * v:.1f}"
            cells.append(f"{fmt(row['precision'])} / {fmt(row['recall'])} / {fmt(row['f1'])}")
        curve.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    images = [f"![precision and recall over t, {name}](images/{plots[name]})" for name in records
              if (root / "metrics" / "calibration" / plots[name]).exists()]
    first = next(iter(records.values()))
    head = (f"{environment_line(*records.values())} {'Gold tokens' if first.get('gold_preproc') else 'Raw text'}; "
            "ECE: 15 equal-width bins; the ECE of sampling alone is what a perfectly calibrated model with the same "
            "probabilities would show on as many entities (`spacy_crf.calibration.sampling_ece`).")
    return (head + "\n\n" + "\n".join(lines) + "\n\nKeeping only the entities with probability >= t "
            "(crf_tagger's `ents_threshold`), in percent:\n\n" + "\n".join(curve)
            + ("\n\n" + "\n".join(images) if images else ""))


def copy_images(root: Path) -> None:
    """The plots the docs show (reliability diagrams, time to accuracy), into docs/images/."""
    images = sorted((root / "metrics" / "calibration").glob("reliability_*.png"))
    images += sorted((root / "metrics" / "calibration").glob("pr_*.png"))
    images += sorted((root / "metrics" / "speed").glob("time_to_accuracy.png"))
    images += sorted((root / "metrics" / "speed" / "buckets").glob("time_to_accuracy_*.png"))
    if images:
        (root / "docs" / "images").mkdir(parents=True, exist_ok=True)
    for image in images:
        target = root / "docs" / "images" / image.name
        if not target.exists() or target.read_bytes() != image.read_bytes():
            shutil.copyfile(image, target)


def stage_records(root: Path, on_gpu: bool, folder: str = "speed") -> Dict[str, dict]:
    """metrics/FOLDER/stages_NAME.json (`python -m benchmarks.gpu_stages ... --output FILE`)
    measured on the GPU (CupyOps) or on the CPU."""
    paths = sorted((root / "metrics" / folder).glob("stages_*.json"))
    records = {path.stem[len("stages_"):]: load(path) for path in paths}
    return {name: r for name, r in records.items() if (r.get("ops") == "CupyOps") == on_gpu}


def stages_table(records: Dict[str, dict]) -> Optional[str]:
    if not records:
        return None
    lines = ["| model | docs, words | tok2vec | + network | decode (Viterbi) | predict | decode share | words/s |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in records.items():
        ms = r["ms"]
        lines.append(
            f"| `{name}` | {r['n_docs']:,}, {r['n_words']:,} | {ms['tok2vec']:,.0f} ms | {ms['tok2vec + network']:,.0f} ms "
            f"| {ms['decode (Viterbi)']:,.0f} ms | {ms['predict']:,.0f} ms | {ms['decode (Viterbi)'] / ms['predict']:.0%} "
            f"| {r['predict_words_per_second']:,} |"
        )
    return environment_line(*records.values()) + " One batch of every dev doc, medians.\n\n" + "\n".join(lines)


def predict_stages(root: Path, folder: str = "speed") -> Optional[str]:
    return stages_table(stage_records(root, on_gpu=False, folder=folder))


def predict_stages_gpu(root: Path, folder: str = "speed") -> Optional[str]:
    table = stages_table(stage_records(root, on_gpu=True, folder=folder))
    return table.replace("medians.", "medians of CUDA-synchronised runs.", 1) if table else None


def probability_overhead(root: Path) -> Optional[str]:
    """metrics/speed/*_overhead.json: `python -m benchmarks.confidence_overhead ... --output FILE`."""
    records = [load(path) for path in sorted((root / "metrics" / "speed").glob("*_overhead.json"))]
    if not records:
        return None
    lines = ["| setting | words/s off | words/s on | extra time |", "|---|---|---|---|"]
    for r in records:
        lines.append(f"| `{r.get('setting', 'store_confidence')}` | {r['words_per_second_off']:,} "
                     f"| {r['words_per_second_on']:,} | {r['overhead_percent']:+.1f}% |")
    return environment_line(*records) + " One thread.\n\n" + "\n".join(lines)


RENDERERS: Dict[str, Callable[[Path], Optional[str]]] = {
    "large-labels": large_labels,
    "large-labels-numba": large_labels_numba,
    "pruned-lattice": pruned_lattice,
    "raw-text-xpos-shipped": functools.partial(raw_text, runs=(
        ("crf_tagger `cpu.cfg`, `by_sentence = true`", "raw_text_cpu_5000.json"),
        ("crf_tagger `cpu.cfg`, `by_sentence = false`", "raw_text_cpu_5000_whole.json"),
        ("spaCy tagger `baseline.cfg`", "raw_text_baseline_5000.json"))),
    "large-labels-viterbi-unroll": functools.partial(
        large_labels_numba, folder="speed/viterbi_unroll",
        files=("large_labels_before.json", "large_labels_after.json"),
        titles=("The code before (58d023b)", "This code")),
    "time-to-accuracy": time_to_accuracy,
    "schedule-seeds": schedule_seeds,
    "quantize": quantize,
    # the bfloat16 measurements: one machine with bfloat16 matrix instructions
    "quantize-bf16": functools.partial(quantize, folder="speed/bf16"),
    "factory-defaults-bf16": functools.partial(factory_defaults, folder="speed/bf16"),
    "peers-bf16": functools.partial(peers, folder="speed/bf16"),
    "pipeline-compare-bf16": functools.partial(pipeline_compare, folder="speed/bf16"),
    # the same, glibc's malloc steady (`--allocator steady`)
    "quantize-steady": functools.partial(quantize, folder="speed/steady"),
    "factory-defaults-steady": functools.partial(factory_defaults, folder="speed/steady"),
    "peers-steady": functools.partial(peers, folder="speed/steady"),
    "predict-stages-modes": functools.partial(predict_stages, folder="speed/cpu_stages"),
    # with the Numba Viterbi (`--allocator steady`)
    "quantize-numba": functools.partial(quantize, folder="speed/numba"),
    "factory-defaults-numba": functools.partial(factory_defaults, folder="speed/numba"),
    "peers-numba": functools.partial(peers, folder="speed/numba"),
    "embedding": embedding,
    "peers": peers,
    "quantize-morph-amd": functools.partial(quantize, folder="speed/amd_morph"),
    "peers-fast": functools.partial(peers, folder="speed/fast", rounds=True),
    "peers-fast-retime": functools.partial(peers, folder="speed/fast_retime15", rounds=True),
    "entity-probabilities": entity_probabilities,
    "entity-probabilities-crossfit": functools.partial(entity_probabilities, prefix="crossfit_"),
    # the project's entity-probabilities-folds: three fold models, each measured on its held-out train fold
    "entity-probabilities-folds": functools.partial(entity_probabilities, prefix="folds_"),
    "probability-overhead": probability_overhead,
    "predict-stages": predict_stages,
    "predict-stages-gpu": predict_stages_gpu,
    "large-labels-gpu": large_labels_gpu,
    "gpu-kernels": gpu_kernels,
    "gpu-pipeline": gpu_pipeline,
    "gpu-before-after": gpu_before_after,
    # composed emissions, on the GPU (benchmarks/gpu_check.sh, then the two Turkish configs in turn)
    "gpu-before-after-composed": functools.partial(gpu_before_after, folder="speed/gpu_h200_composed"),
    "gpu-emissions": gpu_emissions,
    # composed emissions' bias inside the product, before and after, on the CPU
    "cpu-before-after-composed": cpu_before_after,
    # the character CNN's fused CPU prediction, before and after (Turkish, Hungarian)
    "cpu-before-after-charcnn-tr": functools.partial(cpu_before_after, folder="speed/charcnn_tr"),
    "cpu-before-after-charcnn-hu": functools.partial(cpu_before_after, folder="speed/charcnn_hu"),
    "predict-stages-charcnn": functools.partial(predict_stages, folder="speed/charcnn_stages"),
    # the emission layer per length bucket and the vectorized Viterbi, before and after (English, Turkish)
    "cpu-before-after-predict-en": functools.partial(cpu_before_after, folder="speed/predict_fused"),
    "cpu-before-after-predict-tr": functools.partial(cpu_before_after, folder="speed/predict_fused_tr"),
    "cpu-before-after-viterbi-unroll": functools.partial(cpu_before_after, folder="speed/viterbi_unroll"),
    "train-steps-charcnn": functools.partial(train_steps_before_after, folder="speed/charcnn_train"),
    "lstm-cpu": lstm_cpu,
    "train-steps-buckets": train_steps_before_after,
    "time-to-accuracy-buckets": functools.partial(time_to_accuracy, folder="speed/buckets"),
    # measured with the bucketed BiLSTM (`--allocator steady`)
    "quantize-buckets": functools.partial(quantize, folder="speed/buckets"),
    "factory-defaults-buckets": functools.partial(factory_defaults, folder="speed/buckets"),
    "peers-buckets": functools.partial(peers, folder="speed/buckets"),
    "predict-stages-gpu-h200": functools.partial(predict_stages_gpu, folder="speed/gpu_h200"),
    "calibration": calibration,
    "rejected-spans": rejected_spans,
    "morph": morph,
    "udpipe": udpipe,
    "paired-tests": paired_tests,
    "accuracy-by-frequency": accuracy_by_frequency,
    "morph-errors": morph_errors,
    "decoding": decoding,
    "results": results,
    "pipeline-speed": pipeline_speed,
    "contention": contention,
    "kernels": kernels,
    "cpu-viterbi": cpu_viterbi,
    "factory-defaults": factory_defaults,
    "pipeline-compare": pipeline_compare,
    "batch-words": batch_words,
    "peers-batch-words": functools.partial(peers, folder="speed/batch_words", rounds=True, against_tagger=True),
    "peers-batch-sizes": peers_batch_sizes,
    "factory-defaults-batch-words": functools.partial(factory_defaults, folder="speed/batch_words"),
    "pipeline-compare-batch-words": functools.partial(pipeline_compare, folder="speed/batch_words"),
}


def fill(text: str, name: str, table: str) -> str:
    """The text with the block of marker NAME replaced by the table."""
    if name == "results" and "<!-- results:start -->" in text:
        start, end = "<!-- results:start -->", "<!-- results:end -->"
    else:
        start, end = f"<!-- table:{name}:start -->", f"<!-- table:{name}:end -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{start}\n{table}\n{end}", text)


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
