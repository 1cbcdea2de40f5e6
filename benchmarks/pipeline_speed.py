"""Words per second of a trained pipeline's nlp.pipe on a corpus (gold tokens).

    python benchmarks/pipeline_speed.py MODEL_DIR corpus/en_ewt-ud-dev.spacy \
        --output metrics/cpu-speed.json [--repeats 5] [--threads 1] [--gpu-id -1]

Prints and writes the median over repeats, after one warm-up pass.
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import spacy
import torch
from spacy.tokens import Doc, DocBin


def unannotated_docs(nlp, corpus_path):
    """The corpus' words and spaces, without any annotation."""
    docs = DocBin().from_disk(corpus_path).get_docs(nlp.vocab)
    return [Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]) for d in docs]


def words_per_second(nlp, docs, *, repeats, batch_size):
    n_words = sum(len(doc) for doc in docs)
    list(nlp.pipe((doc.copy() for doc in docs[:50]), batch_size=batch_size))  # warm-up
    rates = []
    for _ in range(repeats):
        fresh = [doc.copy() for doc in docs]
        start = time.perf_counter()
        for _ in nlp.pipe(fresh, batch_size=batch_size):
            pass
        rates.append(n_words / (time.perf_counter() - start))
    return statistics.median(rates), rates, n_words


def report(result: dict, output) -> None:
    """Print the result as one JSON line, and write it to `output` if given."""
    print(json.dumps(result))
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--gpu-id", type=int, default=-1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    nlp = spacy.load(args.model)
    docs = unannotated_docs(nlp, args.corpus)
    median, rates, n_words = words_per_second(nlp, docs, repeats=args.repeats, batch_size=args.batch_size)
    result = {
        "words_per_second": round(median),
        "runs": [round(r) for r in rates],
        "n_words": n_words,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "device": f"gpu:{args.gpu_id}" if args.gpu_id >= 0 else "cpu",
    }
    report(result, args.output)


if __name__ == "__main__":
    main()
