"""Serving without torch: the torch-free engine against the torch engine and spaCy's components.

    python -m benchmarks.serving agree TAGGER NER EWT_DEV UNER_DEV [--morphologizer MORPH] [--output ...]
    python -m benchmarks.serving speed --system crf_tagger=TAGGER --system tagger=SPACY_TAGGER \\
        --corpus EWT_DEV [--repeats 5] [--output benchmarks/runs/serving.json]
    python -m benchmarks.serving cold --case "LABEL::PYTHON::PIPELINE,PIPELINE" ... [--repeats 5]
    python -m benchmarks.serving size --env serving=SITE_PACKAGES ... [--output benchmarks/runs/serving.json]
    python -m benchmarks.serving table [--output benchmarks/runs/serving.json]

- agree: every token of both corpora through the torch engine and the
  torch-free one (SPACY_CRF_ENGINE): tokens whose tag, entity label or
  morphology differ, and the largest difference of a marginal.
- speed: `nlp.pipe` words/s on one thread, each crf system on both engines,
  the systems in turn within each repeat (medians of --repeats).
- cold: a fresh process per run (`python -c`): import spaCy, load every
  pipeline of a set, tag one doc through them; wall seconds from the process's
  start to its exit and its peak RSS (wait4), in turn, medians (after one
  uncounted round, which fills Numba's on-disk cache as a first run does).
- size: the bytes under each site-packages folder.
Every subcommand merges its figures into the --output JSON; `table` prints
the Markdown table of the benchmarks page from it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

DEFAULT_OUTPUT = Path("benchmarks/runs/serving.json")
COLD_TEXT = "Anna ate green eggs and ham in New York on Sunday ."


def _merge(output: Path, key: str, value: Any) -> None:
    results = json.loads(output.read_text()) if output.exists() else {}
    results[key] = value
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def _machine() -> str:
    import platform

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}"


def _docs(nlp: Any, path: str, limit: int = 0) -> List[Any]:
    from spacy.tokens import DocBin

    docs = list(DocBin().from_disk(path).get_docs(nlp.vocab))
    return docs[:limit] if limit else docs


def agree(args: argparse.Namespace) -> None:
    import numpy
    import spacy
    from spacy.tokens import Doc

    report: Dict[str, Any] = {}
    systems = [("crf_tagger", args.tagger, args.ewt_dev), ("crf_ner", args.ner, args.uner_dev)]
    if args.morphologizer:
        systems.append(("crf_morphologizer", args.morphologizer, args.ewt_dev))
    for name, model, corpus in systems:
        nlp = spacy.load(model)
        component = next(pipe for pipe_name, pipe in nlp.pipeline if pipe_name.startswith(name))
        gold = _docs(nlp, corpus, args.limit)
        outputs = {}
        for engine in ("torch", "numpy"):
            os.environ["SPACY_CRF_ENGINE"] = engine
            docs = [Doc(nlp.vocab, words=[t.text for t in doc]) for doc in gold]
            tagged = list(nlp.pipe(docs, batch_size=64))
            labels = [(t.tag_, t.pos_, str(t.morph), t.ent_iob_, t.ent_type_) for doc in tagged for t in doc]
            marginals = numpy.concatenate([m for m in component.marginals(docs) if len(m)])
            outputs[engine] = (labels, marginals)
        (a, ma), (b, mb) = outputs["torch"], outputs["numpy"]
        report[name] = {
            "corpus": Path(corpus).name,
            "docs": len(gold),
            "tokens": len(a),
            "different_tokens": sum(x != y for x, y in zip(a, b)),
            "max_marginal_difference": float(numpy.abs(ma - mb).max()),
        }
        print(name, report[name], flush=True)
    os.environ.pop("SPACY_CRF_ENGINE", None)
    _merge(args.output, "agree", report)


def speed(args: argparse.Namespace) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import spacy
    from threadpoolctl import threadpool_limits

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    systems = []
    for item in args.system:
        name, _, path = item.partition("=")
        nlp = spacy.load(path)
        crf = any(pipe_name.startswith("crf_") for pipe_name in nlp.pipe_names)
        for engine in ("numpy", "torch") if crf else (None,):
            systems.append((f"{name} ({engine} engine)" if engine else name, nlp, engine))
    base = systems[0][1]
    gold = _docs(base, args.corpus, args.limit)
    words = [[t.text for t in doc] for doc in gold]
    n_words = sum(len(w) for w in words)
    from spacy.tokens import Doc

    times: Dict[str, List[float]] = {name: [] for name, _, _ in systems}
    with threadpool_limits(1):
        for _name, nlp, engine in systems:  # a warm-up pass each
            if engine:
                os.environ["SPACY_CRF_ENGINE"] = engine
            list(nlp.pipe([Doc(nlp.vocab, words=w) for w in words[:200]], batch_size=256))
        for _ in range(args.repeats):
            for name, nlp, engine in systems:
                if engine:
                    os.environ["SPACY_CRF_ENGINE"] = engine
                docs = [Doc(nlp.vocab, words=w) for w in words]
                start = time.perf_counter()
                for _ in nlp.pipe(docs, batch_size=256):
                    pass
                times[name].append(time.perf_counter() - start)
    result = {
        "corpus": Path(args.corpus).name,
        "words": n_words,
        "repeats": args.repeats,
        "machine": _machine(),
        "words_per_second": {name: n_words / statistics.median(t) for name, t in times.items()},
    }
    for name, value in result["words_per_second"].items():
        print(f"{name}: {value:,.0f} words/s", flush=True)
    _merge(args.output, f"speed:{Path(args.corpus).name}", result)


def cold(args: argparse.Namespace) -> None:
    cases = [item.split("::") for item in args.case]
    runs: Dict[str, Dict[str, List[float]]] = {}
    for repeat in range(args.repeats + 1):  # the first, not counted, fills Numba's cache
        for label, python, paths in cases:
            code = (
                "import spacy\n"
                "doc = None\n"
                f"for path in {[str(Path(p).resolve()) for p in paths.split(',')]!r}:\n"
                "    nlp = spacy.load(path)\n"
                f"    doc = nlp(doc if doc is not None else {COLD_TEXT!r})\n"
            )
            start = time.perf_counter()
            # run from an empty folder: a checkout's egg-info would add its entry points
            process = subprocess.Popen(
                [str(Path(python).absolute()), "-c", code],
                env={**os.environ, "OMP_NUM_THREADS": "1"},
                cwd=tempfile.gettempdir(),
            )
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
            if status != 0:
                raise SystemExit(f"{label}: exit status {status}")
            if repeat == 0:
                continue
            entry = runs.setdefault(label, {"seconds": [], "peak_rss_mb": []})
            entry["seconds"].append(seconds)
            entry["peak_rss_mb"].append(usage.ru_maxrss / 1024)
    result = {
        key: {"seconds": statistics.median(v["seconds"]), "peak_rss_mb": statistics.median(v["peak_rss_mb"])}
        for key, v in runs.items()
    }
    for key, value in result.items():
        print(key, value, flush=True)
    _merge(args.output, "cold", {"runs": result, "machine": _machine(), "repeats": args.repeats})


def size(args: argparse.Namespace) -> None:
    result = {}
    for item in args.env:
        name, _, folder = item.partition("=")
        total = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink())
        result[name] = total / 1e6
        print(f"{name}: {total / 1e6:,.0f} MB", flush=True)
    _merge(args.output, "size_mb", result)


def render_table(results: Dict[str, Any]) -> str:
    """The Markdown table of the benchmarks page's "Serving" section."""
    lines = ["| Measure | System | Value |", "| --- | --- | --- |"]
    for name, mb in results.get("size_mb", {}).items():
        lines.append(f"| site-packages | {name} | {mb:,.0f} MB |")
    for key, value in results.get("cold", {}).get("runs", {}).items():
        lines.append(
            f"| cold start (load, first doc) | {key} | {value['seconds']:.2f} s, {value['peak_rss_mb']:,.0f} MB |"
        )
    for key, value in results.items():
        if key.startswith("speed:"):
            for name, wps in value["words_per_second"].items():
                lines.append(f"| `nlp.pipe`, one thread ({value['corpus']}) | {name} | {wps:,.0f} words/s |")
    for name, value in results.get("agree", {}).items():
        lines.append(
            f"| torch-free vs torch engine ({value['corpus']}, {value['tokens']:,} tokens) | {name} | "
            f"{value['different_tokens']} tokens differ; marginals within {value['max_marginal_difference']:.1e} |"
        )
    return "\n".join(lines)


def table(args: argparse.Namespace) -> None:
    print(render_table(json.loads(args.output.read_text())))


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("agree")
    for name in ("tagger", "ner", "ewt_dev", "uner_dev"):
        p.add_argument(name)
    p.add_argument("--limit", type=int, default=0, help="docs per corpus (0: all)")
    p.add_argument("--morphologizer", default=None, help="a crf_morphologizer pipeline, read on EWT_DEV too")
    p = commands.add_parser("speed")
    p.add_argument("--system", action="append", required=True, help="NAME=PIPELINE")
    p.add_argument("--corpus", required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--limit", type=int, default=0)
    p = commands.add_parser("cold")
    p.add_argument("--case", action="append", required=True, help="LABEL::PYTHON::PIPELINE,PIPELINE")
    p.add_argument("--repeats", type=int, default=5)
    p = commands.add_parser("size")
    p.add_argument("--env", action="append", required=True, help="NAME=SITE_PACKAGES folder")
    commands.add_parser("table")
    args = parser.parse_args(argv)
    {"agree": agree, "speed": speed, "cold": cold, "size": size, "table": table}[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
