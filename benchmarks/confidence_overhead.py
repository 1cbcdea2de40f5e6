"""Cost of storing probabilities: nlp.pipe words/s with a setting off and on, in turns.

    python -m benchmarks.confidence_overhead MODEL_DIR corpus/en_ewt-ud-dev.spacy [--repeats 5]
        [--setting store_confidence|store_entity_probs] [--output OUT.json]

store_confidence: each token's marginal (any spacy-crf component);
store_entity_probs: each entity's exact posterior (crf_ner). overhead_percent is the extra time per
word with the setting on.
"""
import argparse
import json
import statistics
from pathlib import Path

import spacy
import torch

from .common import crf_component_name, unannotated_docs, words_per_second, write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--setting", default="store_confidence", choices=["store_confidence", "store_entity_probs"])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.model)
    tagger = nlp.get_pipe(crf_component_name(nlp))
    docs = unannotated_docs(nlp, args.corpus)
    rates = {False: [], True: []}
    for _ in range(args.repeats):
        for flag in (False, True):
            tagger.cfg[args.setting] = flag
            rates[flag].append(words_per_second(nlp, docs, repeats=1, batch_size=256)[0])
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    record = {"setting": args.setting, "words_per_second_off": round(off), "words_per_second_on": round(on),
              "overhead_percent": round(100 * (off / on - 1), 1), "threads": args.threads, "repeats": args.repeats}
    print(json.dumps(record))
    write_json(record, args.output)


if __name__ == "__main__":
    main()
