"""Speed on a machine that is not idle: training updates/s and nlp.pipe words/s
of crf_tagger and of spaCy's tagger, quiet and beside a competing process.

    python -m benchmarks.contention corpus/en_ewt-ud-train.spacy \
        corpus/en_ewt-ud-dev.spacy [--repeats 3] [--output metrics/contention.json]

Every pipeline uses its factory defaults, initialized on the same training
sentences (--init-sentences) and trained for a few updates first. This process
sets no thread count: each system runs as a user's would. crf_tagger runs
twice, with its default `threads = 0` (auto) and with `threads` equal to
torch's default pool (one thread per core: what spacy-crf 0.1.0 ran with).

Conditions, in turn for every system (normal priority, medians of --repeats):
- quiet: nothing else started;
- torch: a second process multiplying 2048x2048 float32 matrices with torch's
  default thread pool;
- busy: a second process running a single-threaded Python loop.
Training: nlp.update on batches of --batch-size sentences (updates/s).
Inference: nlp.pipe of --pipe-sentences dev sentences, batch 256 (words/s).
Prints a Markdown table with each figure and its ratio to the quiet one, and
writes everything as JSON to --output.
"""

import argparse
import contextlib
import itertools
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import spacy
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.threads import torch_default_threads

from .common import bare, corpus_sentences, write_json

STARTUP_SECONDS = 3.0
COMPETITORS = {
    "quiet": None,
    "torch": "import torch\nx = torch.randn(2048, 2048)\nwhile True:\n    x @ x\n",
    "busy": "while True:\n    pass\n",
}


def sentences(nlp: Language, path: Path, n: int) -> List[Doc]:
    """The first n sentences of a .spacy corpus, each a Doc with its gold tags."""
    return list(itertools.islice(corpus_sentences(nlp.vocab, path), n))


@contextlib.contextmanager
def competitor(kind: str) -> Iterator[None]:
    """Run a competing process of this kind (none for "quiet") for the block."""
    code = COMPETITORS[kind]
    if code is None:
        yield
        return
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(STARTUP_SECONDS)  # let it import and reach its loop
    try:
        yield
    finally:
        process.kill()
        process.wait()


class System:
    """One pipeline with its training examples and an optimizer."""

    def __init__(self, name: str, factory: str, config: Dict, train: List[Doc], *, batch_size: int, warmup: int):
        self.name = name
        self.nlp = spacy.blank("en")
        self.nlp.add_pipe(factory, config=config)
        self.examples = [Example(bare(doc), doc) for doc in train]
        self.optimizer = self.nlp.initialize(lambda: self.examples)
        self.batch_size = batch_size
        self.position = 0
        self.train(warmup)

    def train(self, n_updates: int) -> float:
        """Run n updates; RETURNS the updates per second."""
        start = time.perf_counter()
        for _ in range(n_updates):
            batch = self.examples[self.position : self.position + self.batch_size]
            self.position = (self.position + self.batch_size) % (len(self.examples) - self.batch_size)
            self.nlp.update(batch, sgd=self.optimizer)
        return n_updates / (time.perf_counter() - start)

    def pipe(self, docs: List[Doc]) -> float:
        """Tag the docs with nlp.pipe; RETURNS the words per second."""
        fresh = [bare(doc) for doc in docs]
        n_words = sum(len(doc) for doc in fresh)
        start = time.perf_counter()
        for _ in self.nlp.pipe(fresh, batch_size=256):
            pass
        return n_words / (time.perf_counter() - start)


def table(results: Dict) -> str:
    """A Markdown table: per system and workload, each condition's median and
    its ratio to the quiet median (the conditions measured, quiet first)."""
    first = next(iter(next(iter(results.values())).values()))
    kinds = [kind for kind in COMPETITORS if kind in first]
    head = "| system | workload | " + " | ".join(kinds) + " |"
    lines = [head, "|" + "---|" * (2 + len(kinds))]
    for system, workloads in results.items():
        for workload, by_kind in workloads.items():
            quiet = by_kind["quiet"]["median"]
            cells = []
            for kind in kinds:
                value = by_kind[kind]["median"]
                ratio = "" if kind == "quiet" else f" ({value / quiet:.2f}x)"
                cells.append(f"{value:,.1f}{ratio}" if value < 100 else f"{value:,.0f}{ratio}")
            lines.append(f"| {system} | {workload} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> Dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train", type=Path)
    parser.add_argument("dev", type=Path)
    parser.add_argument("--init-sentences", type=int, default=1200)
    parser.add_argument("--pipe-sentences", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--updates", type=int, default=8, help="updates per training measurement")
    parser.add_argument("--warmup", type=int, default=5, help="updates before any measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conditions", nargs="+", default=list(COMPETITORS), choices=list(COMPETITORS))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    blank = spacy.blank("en")
    train = sentences(blank, args.train, args.init_sentences)
    dev = sentences(blank, args.dev, args.pipe_sentences)
    pool = torch_default_threads()
    systems = [
        System(
            "crf_tagger (threads = 0, auto)", "crf_tagger", {}, train, batch_size=args.batch_size, warmup=args.warmup
        ),
        System(
            f"crf_tagger (threads = {pool}, torch's pool)",
            "crf_tagger",
            {"threads": pool},
            train,
            batch_size=args.batch_size,
            warmup=args.warmup,
        ),
        System("spaCy tagger", "tagger", {}, train, batch_size=args.batch_size, warmup=args.warmup),
    ]
    runs: Dict[str, Dict[str, Dict[str, List[float]]]] = {
        s.name: {"train updates/s": {}, "pipe words/s": {}} for s in systems
    }
    for kind in args.conditions:
        with competitor(kind):
            for _ in range(args.repeats):
                for system in systems:  # in turn, so that drift hits every system alike
                    runs[system.name]["train updates/s"].setdefault(kind, []).append(system.train(args.updates))
                    runs[system.name]["pipe words/s"].setdefault(kind, []).append(system.pipe(dev))
    results = {
        system: {
            workload: {kind: {"median": statistics.median(values), "runs": values} for kind, values in by_kind.items()}
            for workload, by_kind in workloads.items()
        }
        for system, workloads in runs.items()
    }
    record = {
        "torch_default_threads": pool,
        "conditions": {kind: COMPETITORS[kind] for kind in args.conditions},
        "settings": {k: str(v) for k, v in vars(args).items()},
        "results": results,
    }
    if "quiet" in args.conditions:
        print(table(results))
    write_json(record, args.output)
    return record


if __name__ == "__main__":
    main()
