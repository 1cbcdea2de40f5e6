"""Cost of store_confidence: nlp.pipe words/s with it off and on, in turns.

    python -m benchmarks.confidence_overhead MODEL_DIR corpus/en_ewt-ud-dev.spacy [--repeats 5]
"""
import argparse
import json
import statistics

import spacy
import torch

from .common import unannotated_docs, words_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.model)
    tagger = nlp.get_pipe("crf_tagger")
    docs = unannotated_docs(nlp, args.corpus)
    rates = {False: [], True: []}
    for _ in range(args.repeats):
        for flag in (False, True):
            tagger.cfg["store_confidence"] = flag
            rates[flag].append(words_per_second(nlp, docs, repeats=1, batch_size=256)[0])
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(json.dumps({"words_per_second_off": round(off), "words_per_second_on": round(on),
                      "overhead_percent": round(100 * (off / on - 1), 1), "threads": args.threads}))


if __name__ == "__main__":
    main()
