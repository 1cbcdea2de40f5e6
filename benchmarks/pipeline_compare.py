"""crf_tagger against spaCy's tagger, end to end, side by side in one process.

    python -m benchmarks.pipeline_compare training/cpu/model-best training/baseline/model-best \\
        corpus/en_ewt-ud-dev.spacy corpus/en_ewt-ud-train.spacy [--repeats 5] [--threads 1]

Measures, with the same thread count, medians over repeats taken in turn:
  1. nlp.pipe words/s of both pipelines on the dev texts (gold tokens);
  2. for crf_tagger, the share of Viterbi decoding in its predict step,
     against the encoder (tok2vec + BiLSTM + emissions);
  3. training words/s of both: nlp.update on batches of ~1000 words of the
     training examples as each pipeline's config reads them (spaCy's Corpus
     with the config's `corpora.train.gold_preproc`: one sentence per example
     with the treebank's tokens for the shipped configs, as `spacy train`
     feeds them); --whole-docs times the corpus' multi-sentence docs through
     spaCy's tokenizer instead.
"""

import argparse
import statistics
import time
from pathlib import Path

import spacy
import torch
from spacy.training import Corpus

from .common import (
    add_allocator_argument,
    in_turn,
    pipe_rates_in_turn,
    unannotated_docs,
    use_allocator,
    write_json,
)


def decode_share(nlp, docs, batch_size=256):
    """Seconds of scoring and of decoding the docs, cut as crf_tagger cuts
    them in nlp.pipe (windows, and sentences where `by_sentence` is on)."""
    tagger = nlp.get_pipe("crf_tagger")
    docs = list(nlp.pipe(docs, disable=["crf_tagger"]))
    encode = decode = 0.0
    for i in range(0, len(docs), batch_size):
        start = time.perf_counter()
        batches = [batch for _, _, batch in tagger._scores(docs[i : i + batch_size]).parts()]
        middle = time.perf_counter()
        for batch in batches:
            batch.decode()
        decode += time.perf_counter() - middle
        encode += middle - start
    return encode, decode


# what the training examples were, by gold_preproc: the JSON's "train_examples"
TRAINING_UNITS = {True: "sentences, gold tokens", False: "whole docs, spaCy's tokenizer"}


def training_examples(nlp, path, *, whole_docs=False):
    """The training examples as the pipeline's config reads them (its
    `corpora.train.gold_preproc`), or whole docs through the tokenizer."""
    gold_preproc = False if whole_docs else bool(nlp.config["corpora"]["train"].get("gold_preproc", False))
    return list(Corpus(path, gold_preproc=gold_preproc)(nlp)), gold_preproc


def training_words_per_second(nlp, examples, *, words, batch_words=1000):
    optimizer = nlp.resume_training()
    batches, batch, n = [], [], 0
    for eg in examples:
        batch.append(eg)
        n += len(eg.predicted)
        if sum(len(e.predicted) for e in batch) >= batch_words:
            batches.append(batch)
            batch = []
        if n >= words:
            break
    start = time.perf_counter()
    for batch in batches:
        nlp.update(batch, sgd=optimizer, drop=0.1)
    seconds = time.perf_counter() - start
    return sum(len(e.predicted) for b in batches for e in b) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("crf_model")
    parser.add_argument("baseline_model")
    parser.add_argument("dev")
    parser.add_argument("train")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-words", type=int, default=20000)
    parser.add_argument(
        "--whole-docs", action="store_true", help="train on the corpus' multi-sentence docs, whatever the configs say"
    )
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    crf = spacy.load(args.crf_model)
    base = spacy.load(args.baseline_model)
    docs = unannotated_docs(crf, args.dev)
    systems = {"crf_tagger": crf, "spaCy tagger": base}
    pipe = pipe_rates_in_turn(systems, docs, args.repeats)
    encode, decode = decode_share(crf, [d.copy() for d in docs])
    examples, units = {}, {}
    for name, nlp in systems.items():
        examples[name], gold_preproc = training_examples(nlp, args.train, whole_docs=args.whole_docs)
        units[name] = TRAINING_UNITS[gold_preproc]
    train = in_turn(
        systems,
        max(1, args.repeats // 2),
        lambda name: training_words_per_second(systems[name], examples[name], words=args.train_words),
    )
    result = {
        "threads": args.threads,
        "pipe_words_per_second": {k: round(statistics.median(v)) for k, v in pipe.items()},
        "train_words_per_second": {k: round(statistics.median(v)) for k, v in train.items()},
        "train_examples": units,
        "crf_decode_seconds": round(decode, 3),
        "crf_encoder_seconds": round(encode, 3),
        "decode_share_of_encoder": round(decode / encode, 3),
    }
    p, t = result["pipe_words_per_second"], result["train_words_per_second"]
    print(f"{args.threads} thread(s), medians of {args.repeats} runs taken in turn; training examples: {units}")
    print("| pipeline | nlp.pipe words/s | training words/s |")
    print("|---|---|---|")
    for name in p:
        print(f"| {name} | {p[name]:,} | {t[name]:,} |")
    print(
        f"crf_tagger/spaCy: pipe {p['crf_tagger'] / p['spaCy tagger']:.2f}x, "
        f"training {t['crf_tagger'] / t['spaCy tagger']:.2f}x; Viterbi = "
        f"{100 * result['decode_share_of_encoder']:.1f}% of the encoder's time in predict"
    )
    write_json(result, args.output)


if __name__ == "__main__":
    main()
