"""What reading by sentence costs in speed: one trained pipeline's `nlp.pipe`
words/s with crf_tagger's `by_sentence` false and true, in turn.

    python -m benchmarks.by_sentence MODEL_DIR corpus/en_ewt-ud-dev.spacy \
        [--sentences] [--repeats 9] [--threads 1] [--output OUT.json]

The corpus' docs as they are (e.g. the 10-sentence docs of `spacy convert
--n-sents 10`, no sentence boundaries: `by_sentence` cuts them where spaCy's
sentencizer would), or with --sentences one doc per gold sentence. Both
settings load the same model; they are timed in turn (batch 256, one untimed
round first), and the result gives each one's median words/s and the ratio
true / false.
"""

import argparse
import statistics
from pathlib import Path

import spacy
import torch
from spacy.training import Corpus

from .common import bare, environment, pipe_rates_in_turn, report, unannotated_docs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--sentences", action="store_true", help="one doc per gold sentence")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    pipelines = {
        str(flag).lower(): spacy.load(args.model, config={"components.crf_tagger.by_sentence": flag})
        for flag in (False, True)
    }
    nlp = pipelines["false"]
    if args.sentences:
        docs = [bare(eg.reference) for eg in Corpus(args.corpus, gold_preproc=True)(nlp)]
    else:
        docs = unannotated_docs(nlp, args.corpus)
    rates = pipe_rates_in_turn(pipelines, docs, args.repeats)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    report(
        {
            "model": args.model,
            "corpus": args.corpus,
            "docs": "sentences" if args.sentences else "as in the corpus",
            "n_docs": len(docs),
            "n_words": sum(len(doc) for doc in docs),
            "threads": args.threads,
            "repeats": args.repeats,
            "settings": {name: nlp.get_pipe("crf_tagger").cfg["by_sentence"] for name, nlp in pipelines.items()},
            "words_per_second": {name: round(value) for name, value in medians.items()},
            "rates": {name: [round(v) for v in values] for name, values in rates.items()},
            "ratio_true_over_false": round(medians["true"] / medians["false"], 3),
            "environment": environment(),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
