"""Words per second of a trained pipeline's nlp.pipe on a corpus (gold tokens).

    python -m benchmarks.pipeline_speed MODEL_DIR corpus/en_ewt-ud-dev.spacy \
        --output metrics/cpu-speed.json [--repeats 5] [--threads 1] [--gpu-id -1]

Prints and writes the median over repeats, after one warm-up pass.
"""

import argparse
from pathlib import Path

import spacy
import torch

from .common import (
    add_allocator_argument,
    report,
    unannotated_docs,
    use_allocator,
    words_per_second,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--gpu-id", type=int, default=-1)
    args = parser.parse_args()
    use_allocator(args.allocator)
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
