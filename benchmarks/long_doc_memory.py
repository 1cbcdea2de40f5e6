"""Peak memory and time for tagging one very long doc.

    python -m benchmarks.long_doc_memory MODEL_DIR [--tokens 100000] [--window 8192] [--chunk-size 512]

Builds a doc from the words of a sentence list repeated to --tokens tokens,
tags it once, and prints the process's peak resident memory (ru_maxrss) before
and after, with the wall time.
"""

import argparse
import json
import resource
import time

import spacy
import torch
from spacy.tokens import Doc

WORDS = "The quick brown fox , which was n't hungry , jumped over 3 lazy dogs in Paris .".split()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=None, help="override the model's chunk_size")
    parser.add_argument("--window", type=int, default=None, help="override the component's window (0: whole doc)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.model)
    layer = nlp.get_pipe("crf_tagger").model.get_ref("output_layer")
    tagger_cfg = nlp.get_pipe("crf_tagger").cfg
    if args.chunk_size is not None:
        layer.attrs["chunk_size"] = args.chunk_size
    if args.window is not None:
        tagger_cfg["window"] = args.window
    words = [WORDS[i % len(WORDS)] for i in range(args.tokens)]
    nlp(Doc(nlp.vocab, words=WORDS))  # warm-up
    before = peak_mb()
    start = time.perf_counter()
    doc = nlp(Doc(nlp.vocab, words=words))
    seconds = time.perf_counter() - start
    assert len(doc) == args.tokens
    print(
        json.dumps(
            {
                "tokens": args.tokens,
                "window": tagger_cfg.get("window"),
                "chunk_size": layer.attrs["chunk_size"],
                "peak_rss_mb_before": round(before),
                "peak_rss_mb_after": round(peak_mb()),
                "seconds": round(seconds, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
