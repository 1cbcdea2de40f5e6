"""crf_tagger's `batch_words` setting: nlp.pipe on docs of one sentence, each
value in turn with spaCy's tagger, in one process.

    python -m benchmarks.batch_words training/cpu/model-best training/baseline/model-best \\
        corpus/en_ewt-ud-train.spacy [--batch-words 0 4096 8192 16384 32768] [--repeats 7] \\
        [--batch-size 256] [--threads 1] [--allocator steady] [--memory] \\
        [--output metrics/speed/batch_words.json]

The docs are the corpus' sentences, one doc each, gold tokens: take a corpus
of many times the largest batch (EWT train, 204,577 words), so that large
batches are still several. (Not the same sentences repeated: a batch
computes the embedding of each distinct word once, so repeats would flatter
large batches.) Every round times
spaCy's tagger and the crf_tagger pipeline at each `batch_words` once,
`nlp.pipe(batch_size=--batch-size)`, after an untimed round; each value's row
has the median words/s and the median and range of its per-round ratios to
the tagger. The labels of every value are compared with those of the first
one (`tokens_labelled_differently`). `--memory` (Linux) also loads the
pipeline in a fresh process per value and records how far one pass over the
docs raises the process' peak resident memory (VmHWM, reset after loading)
above what it held once loaded.
"""

import argparse
import multiprocessing
import statistics
from pathlib import Path
from typing import Dict, List

import spacy
import torch

from .common import (
    add_allocator_argument,
    bare,
    corpus_sentences,
    environment,
    in_turn,
    report,
    use_allocator,
    words_per_second,
)


def sentence_docs(nlp, corpus_path: str) -> list:
    """One bare doc per sentence of the corpus."""
    return [bare(sentence) for sentence in corpus_sentences(nlp.vocab, corpus_path)]


def labels(nlp, docs, batch_size: int) -> List[str]:
    return [
        f"{t.tag_}|{t.pos_}|{t.morph}" for doc in nlp.pipe((d.copy() for d in docs), batch_size=batch_size) for t in doc
    ]


def _status_mb(field: str) -> float:
    """A /proc/self/status field (VmRSS, VmHWM) in MB."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def peak_memory(model: str, corpus: str, batch_words: int, batch_size: int, threads: int, queue) -> None:
    """In a fresh process: MB resident after loading the pipeline and the docs,
    and the peak during one pass (Linux: the peak is reset through
    /proc/self/clear_refs after loading)."""
    torch.set_num_threads(threads)
    nlp = spacy.load(model, config={"components": {"crf_tagger": {"batch_words": batch_words}}})
    docs = sentence_docs(nlp, corpus)
    loaded = _status_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    for _ in nlp.pipe(docs, batch_size=batch_size):
        pass
    queue.put((loaded, _status_mb("VmHWM")))


def memory_rows(args) -> Dict[int, Dict[str, float]]:
    context = multiprocessing.get_context("spawn")
    rows = {}
    for value in args.batch_words:
        queue = context.Queue()
        process = context.Process(
            target=peak_memory, args=(args.crf_model, args.corpus, value, args.batch_size, args.threads, queue)
        )
        process.start()
        loaded, after = queue.get()
        process.join()
        rows[value] = {"loaded_mb": round(loaded, 1), "pass_mb": round(after - loaded, 1)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("crf_model")
    parser.add_argument("baseline_model")
    parser.add_argument("corpus")
    parser.add_argument("--batch-words", type=int, nargs="+", default=[0, 4096, 8192, 16384, 32768])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory", action="store_true")
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    crf = spacy.load(args.crf_model)
    tagger = crf.get_pipe("crf_tagger")
    base = spacy.load(args.baseline_model)
    docs = sentence_docs(crf, args.corpus)

    def measure(name: str) -> float:
        if name == "spaCy tagger":
            return words_per_second(base, docs, repeats=1, batch_size=args.batch_size)[0]
        tagger.cfg["batch_words"] = int(name)
        return words_per_second(crf, docs, repeats=1, batch_size=args.batch_size)[0]

    names = ["spaCy tagger"] + [str(value) for value in args.batch_words]
    rates = in_turn(names, args.repeats, measure, warmup=1)
    reference = None
    rows = []
    for value in args.batch_words:
        tagger.cfg["batch_words"] = value
        predicted = labels(crf, docs, args.batch_size)
        reference = reference or predicted
        ratios = [c / t for c, t in zip(rates[str(value)], rates["spaCy tagger"])]
        rows.append(
            {
                "batch_words": value,
                "words_per_second": round(statistics.median(rates[str(value)])),
                "ratio_to_tagger_median": round(statistics.median(ratios), 3),
                "ratio_to_tagger_range": [round(min(ratios), 3), round(max(ratios), 3)],
                "tokens_labelled_differently": sum(a != b for a, b in zip(predicted, reference)) / len(reference),
            }
        )
    if args.memory:
        for row, (_value, memory) in zip(rows, memory_rows(args).items()):
            row.update(memory)
    report(
        {
            "crf_model": args.crf_model,
            "baseline_model": args.baseline_model,
            "docs": len(docs),
            "words": sum(len(doc) for doc in docs),
            "batch_size": args.batch_size,
            "threads": args.threads,
            "repeats": args.repeats,
            "tagger_words_per_second": round(statistics.median(rates["spaCy tagger"])),
            "rows": rows,
            "environment": environment(),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
