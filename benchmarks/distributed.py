"""Words per second of tagging a corpus: nlp.pipe (1 and 2 processes), the
local engine and the ray engine (1 and 2 workers) of `spacy_crf.corpus`, with
one model on the texts of a corpus (the raw texts, tokenized by the pipeline).

    python -m spacy train configs/cpu.cfg --output /tmp/cpu200 \
        --paths.train corpus/en_ewt-ud-train.spacy --paths.dev corpus/en_ewt-ud-dev.spacy \
        --training.max_steps 200          # a quick model: speed does not depend on accuracy
    OMP_NUM_THREADS=1 python -m benchmarks.distributed /tmp/cpu200/model-best \
        corpus/en_ewt-ud-train.spacy --repeats 3 --output metrics/speed/distributed.json

Every run tags the same JSON Lines file (the corpus' doc texts) into a fresh
output folder. The methods take turns, repeat after repeat (a slow spell of a
shared machine hits them all); medians over repeats. `words_per_second` is over the whole
wall time of a run; start-up is reported apart:
- `ray_init_seconds`: starting the local Ray cluster (once, before the ray runs).
- `fixed_seconds`: the wall time of the same method on a one-document input
  (worker processes or actors started, pipeline loaded; on the running cluster).
- `words_per_second_excl_startup`: for the engines, TagSummary's
  steady_words_per_second (per worker, its words over the span from the start
  of its first chunk to the end of its last, summed over workers); for
  nlp.pipe, words / (seconds - fixed_seconds).
"""

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

os.environ.setdefault("OMP_NUM_THREADS", "1")

import spacy  # noqa: E402
import torch  # noqa: E402
from spacy.tokens import DocBin  # noqa: E402

from spacy_crf.corpus import tag_corpus  # noqa: E402


def write_texts(corpus: Path, path: Path) -> int:
    """Write the corpus' doc texts as JSON Lines; return the number of docs."""
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(corpus).get_docs(nlp.vocab))
    with path.open("w", encoding="utf8") as file_:
        for i, doc in enumerate(docs):
            file_.write(json.dumps({"id": i, "text": doc.text}) + "\n")
    return len(docs)


def summarize(seconds: List[float], steady: List[float], words: int) -> Dict[str, Any]:
    """Medians over repeats of a method's wall time (and steady words/s)."""
    result: Dict[str, Any] = {
        "seconds": statistics.median(seconds),
        "runs": [round(x, 2) for x in seconds],
        "words": words,
    }
    if steady:
        result["steady_words_per_second"] = round(statistics.median(steady))
        result["steady_runs"] = [round(r) for r in steady]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus", type=Path, help="a .spacy corpus; its doc texts are tagged")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="distributed-"))
    texts_path = tmp / "texts.jsonl"
    n_docs = write_texts(args.corpus, texts_path)
    one_path = tmp / "one.jsonl"
    one_path.write_text(texts_path.read_text(encoding="utf8").splitlines()[0] + "\n", encoding="utf8")
    texts = [json.loads(line)["text"] for line in texts_path.read_text(encoding="utf8").splitlines()]
    nlp = spacy.load(args.model)
    list(nlp.pipe(texts[:20]))  # warm-up

    def pipe(n_process: int, items: List[str]) -> Callable[[], Tuple[int, Optional[float]]]:
        return lambda: (sum(len(doc) for doc in nlp.pipe(items, batch_size=args.batch_size, n_process=n_process)), None)

    counter = iter(range(10**6))

    def engine(name: str, workers: int, source: Path) -> Callable[[], Tuple[int, Optional[float]]]:
        def run() -> Tuple[int, Optional[float]]:
            out = tmp / f"out-{name}-{workers}-{next(counter)}"
            summary = tag_corpus(
                args.model,
                source,
                out,
                engine=name,
                workers=workers,
                batch_size=args.batch_size,
                output_format="jsonl",
                progress=False,
            )
            return summary.words, summary.steady_words_per_second

        return run

    import ray

    # Ray is up for every method, so that its idle processes weigh on all alike
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    ray_init_seconds = time.perf_counter() - start
    methods: Dict[str, Callable[[List[str], Path], Callable[[], Tuple[int, Optional[float]]]]] = {
        "nlp.pipe, 1 process": lambda items, path: pipe(1, items),
        "nlp.pipe, n_process=2": lambda items, path: pipe(2, items),
        "local engine, 1 worker": lambda items, path: engine("local", 1, path),
        "local engine, 2 workers": lambda items, path: engine("local", 2, path),
        "ray engine, 1 worker": lambda items, path: engine("ray", 1, path),
        "ray engine, 2 workers": lambda items, path: engine("ray", 2, path),
    }
    seconds: Dict[str, List[float]] = {label: [] for label in methods}
    fixed: Dict[str, List[float]] = {label: [] for label in methods}
    steady: Dict[str, List[float]] = {label: [] for label in methods}
    words: Dict[str, int] = {}
    try:
        # round robin: a slow spell of this shared machine hits every method
        for repeat in range(args.repeats):
            for label, make in methods.items():
                start = time.perf_counter()
                make(texts[:1], one_path)()
                fixed[label].append(time.perf_counter() - start)
                start = time.perf_counter()
                words[label], rate = make(texts, texts_path)()
                seconds[label].append(time.perf_counter() - start)
                if rate is not None:
                    steady[label].append(rate)
                print(f"repeat {repeat}: {label}: {seconds[label][-1]:.2f} s, steady {rate}", flush=True)
    finally:
        ray.shutdown()
    results: Dict[str, Dict[str, Any]] = {}
    for label in methods:
        results[label] = {
            **summarize(seconds[label], steady[label], words[label]),
            "fixed_seconds": statistics.median(fixed[label]),
        }

    for row in results.values():
        row["words_per_second"] = round(row["words"] / row["seconds"])
        row["words_per_second_excl_startup"] = row.get(
            "steady_words_per_second", round(row["words"] / (row["seconds"] - row["fixed_seconds"]))
        )
    outputs = {p.parent.name: p.read_bytes() for p in tmp.glob("out-*/texts.jsonl.00000.jsonl")}
    ray1, ray2 = results["ray engine, 1 worker"], results["ray engine, 2 workers"]
    summary = {
        "model": args.model,
        "corpus": str(args.corpus),
        "docs": n_docs,
        "words": results["nlp.pipe, 1 process"]["words"],
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "ray_init_seconds": round(ray_init_seconds, 2),
        "results": results,
        "ray_2_over_1_workers": round(ray2["words_per_second_excl_startup"] / ray1["words_per_second_excl_startup"], 2),
        "ray_2_workers_over_n_process_2": round(
            ray2["words_per_second_excl_startup"] / results["nlp.pipe, n_process=2"]["words_per_second_excl_startup"], 2
        ),
        "engine_outputs_identical": len(set(outputs.values())) == 1,
        "engine_runs_compared": len(outputs),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf8")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
