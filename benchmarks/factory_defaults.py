"""What `nlp.add_pipe("crf_tagger")` users get first: the factory's default
model against spaCy's tagger with its defaults, both initialized on the same
sentences, then nlp.pipe words/s on a corpus, taken in turn (medians).

    python -m benchmarks.factory_defaults corpus/en_ewt-ud-train.spacy \
        corpus/en_ewt-ud-dev.spacy [--init-sentences 300] [--repeats 5] [--threads 1]
        [--crf-model default|legacy] [--quantize none|int8|bf16 ...] [--sentences]

`--crf-model legacy` uses 0.1.0's default model (HashEmbedCNN + BiLSTM 128)
instead, for comparison; `--quantize` sets the component's `quantize` (int8
or bfloat16 inference on the CPU); `--sentences` times one doc per sentence
of the corpus instead of its docs. Given several modes, one crf_tagger runs
in each of them in turn with spaCy's tagger, in one process, and the record
has a row per mode (`rows`). Prints a JSON line; the accuracy of the defaults
needs training: see configs/cpu.cfg, which uses the same network.
"""

import argparse
import pickle
import statistics
from pathlib import Path

import spacy
import torch
from spacy.training import Example
from thinc.api import Config

from .common import (
    add_allocator_argument,
    bare,
    corpus_sentences,
    environment,
    pipe_rates_in_turn,
    report,
    unannotated_docs,
    use_allocator,
)

LEGACY_MODEL = """
[model]
@architectures = "spacy_crf.BiLSTMCRF.v1"
hidden_width = 128
depth = 1
dropout = 0.0
crf = true

[model.tok2vec]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 96
depth = 4
embed_size = 2000
window_size = 1
maxout_pieces = 3
subword_features = true
"""


def initialized(factory, train_docs, n, config=None):
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, config=config or {})
    examples = [Example(nlp.make_doc(d.text), d) for d in train_docs[:n]]
    nlp.initialize(lambda: examples)
    return nlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--init-sentences", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--crf-model", choices=["default", "legacy"], default="default")
    parser.add_argument("--quantize", nargs="+", choices=["none", "int8", "bf16"], default=["none"])
    parser.add_argument("--sentences", action="store_true", help="one doc per sentence of the corpus")
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    train_docs = list(corpus_sentences(spacy.blank("en").vocab, args.train))
    config = {}
    if args.crf_model == "legacy":
        config["model"] = Config().from_str(LEGACY_MODEL)["model"]
    crf = initialized("crf_tagger", train_docs, args.init_sentences, config)
    base = initialized("tagger", train_docs, args.init_sentences)
    if args.sentences:
        docs = [bare(sentence) for sentence in corpus_sentences(crf.vocab, args.dev)]
    else:
        docs = unannotated_docs(crf, args.dev)
    modes = list(dict.fromkeys(args.quantize))
    names = {mode: args.crf_model if mode == "none" else f"{args.crf_model}, quantize {mode}" for mode in modes}
    pipelines = {mode: pickle.loads(pickle.dumps(crf)) for mode in modes}  # the same weights, one per mode
    for mode, nlp in pipelines.items():
        nlp.get_pipe("crf_tagger").quantize = mode
    rates = pipe_rates_in_turn({**pipelines, "tagger": base}, docs, args.repeats)
    rows = []
    for mode in modes:
        ratios = [c / t for c, t in zip(rates[mode], rates["tagger"])]
        rows.append(
            {
                "crf_model": names[mode],
                "words_per_second": {
                    "crf_tagger": round(statistics.median(rates[mode])),
                    "tagger": round(statistics.median(rates["tagger"])),
                },
                "ratio_median": round(statistics.median(ratios), 3),
                "ratios": [round(r, 3) for r in ratios],
            }
        )
    result = {
        **rows[0],
        "init_sentences": args.init_sentences,
        "threads": args.threads,
        "docs": "sentences" if args.sentences else "as in the corpus",
        "n_docs": len(docs),
    }
    if len(rows) > 1:
        result["rows"] = rows
    result["environment"] = environment()
    report(result, args.output)


if __name__ == "__main__":
    main()
