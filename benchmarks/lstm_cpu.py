"""The BiLSTM on the CPU: torch's packed LSTM against oneDNN's over length buckets.

    python -m benchmarks.lstm_cpu corpus/en_ewt-ud-train.spacy corpus/en_ewt-ud-dev.spacy \\
        [--inputs 128 --hidden 192 --depth 1] [--step-costs 1 2 4] [--bucket-costs 20 40 80] [--repeats 7] \\
        [--threads 1] [--model PATH[,quantize=MODE]]... [--allocator steady] \\
        [--output metrics/speed/lstm_cpu.json]

The network's BiLSTM (spacy_crf.nn.BiLSTMCRF's, random weights: the time does
not depend on them) over the lengths of real batches:
- prediction: the dev corpus' docs, split into the component's 512-token
  chunks, as one batch (`nlp.pipe` with batch 256 reads them so), forward only;
- training: batches of the train corpus' sentences (gold_preproc) of about 1,000
  and 3,000 words (configs/cpu.cfg's batcher grows from 100 to 1,000 words),
  forward and backward.
Each is timed with torch's packed LSTM (`lstm_runs = "packed"`, spacy-crf 0.3.0's
way) and over length buckets (`"auto"`, spacy_crf.nn.kernels.bucketed_lstm) for each
pair of bucket cost-model constants ("buckets STEP/BUCKET"), in turn, medians
of --repeats.

With --model (a trained crf_tagger pipeline, optionally `,quantize=int8|bf16`):
`nlp.pipe` words/s of the dev corpus (batch 256) with the pipeline's BiLSTM
run packed and bucketed, in turn, medians of --repeats rounds, and the share
of tokens whose label (tag, POS, morph) differs between the two.
"""

import argparse
import random
import time
from pathlib import Path
from typing import Callable, Dict, List

import spacy
import torch

from spacy_crf.ml import crf_shim, torch_network
from spacy_crf.nn import BiLSTMCRF
from spacy_crf.nn.kernels import bucketed_lstm

from .common import (
    add_allocator_argument,
    in_turn,
    report,
    token_labels,
    unannotated_docs,
    use_allocator,
    words_per_second,
)

CHUNK = 512


def doc_lengths(path: str, sentences: bool) -> List[int]:
    nlp = spacy.blank("xx")
    docs = spacy.tokens.DocBin().from_disk(path).get_docs(nlp.vocab)
    if sentences:
        return [len(sent) for doc in docs for sent in (doc.sents if doc.has_annotation("SENT_START") else [doc])]
    return [min(CHUNK, len(doc) - start) for doc in docs for start in range(0, max(len(doc), 1), CHUNK)]


def training_batch(lengths: List[int], words: int, seed: int) -> List[int]:
    rng = random.Random(seed)
    batch: List[int] = []
    while sum(batch) < words:
        batch.append(rng.choice(lengths))
    return batch


def timer(network: BiLSTMCRF, lengths: List[int], train: bool) -> Callable[[], None]:
    lengths_t = torch.tensor(lengths)
    # the rows' tokens one after another, as the component feeds the network on the CPU
    inputs = torch.randn(sum(lengths), network.n_inputs, requires_grad=train)

    def run() -> None:
        with torch.set_grad_enabled(train):
            scores = network(inputs, lengths_t)
            if train:
                scores.emissions.sum().backward()

    return run


def pipeline_rates(spec: str, corpus: str, repeats: int) -> Dict[str, object]:
    """nlp.pipe words/s of a trained pipeline with its BiLSTM packed and bucketed, in turn."""
    path, *options = spec.split(",")
    quantize = dict(option.split("=", 1) for option in options).get("quantize", "none")
    nlp = spacy.load(path, config={"components": {"crf_tagger": {"quantize": quantize}}})
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    docs = unannotated_docs(nlp, corpus)

    shim = crf_shim(nlp.get_pipe("crf_tagger").model)

    def run(setting: str, measure: Callable[[], object]):
        # the network and its int8/bf16 inference copy, once made (an int8 copy runs packed anyway)
        for module in (network, shim._inference_copy):
            if module is not None:
                module.lstm_runs = "packed" if setting == "packed" else "auto"
        return measure()

    settings = ["packed", "buckets"]
    rates = in_turn(
        settings, repeats, lambda v: run(v, lambda: words_per_second(nlp, docs, repeats=1, batch_size=256)[0]), warmup=1
    )
    outputs = {setting: run(setting, lambda: token_labels(nlp, docs)) for setting in settings}
    medians = {name: sorted(values)[len(values) // 2] for name, values in rates.items()}
    differ = sum(a != b for a, b in zip(outputs["packed"], outputs["buckets"]))
    return {
        "model": path,
        "quantize": quantize,
        "n_words": sum(len(doc) for doc in docs),
        "words_per_second": {name: round(v, 1) for name, v in medians.items()},
        "runs": {name: [round(v, 1) for v in values] for name, values in rates.items()},
        "speedup": medians["buckets"] / medians["packed"],
        "tokens_labelled_differently": differ / max(1, len(outputs["packed"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train_corpus")
    parser.add_argument("dev_corpus")
    parser.add_argument("--inputs", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=192)
    parser.add_argument("--depth", type=int, default=1)
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument(
        "--step-costs",
        type=float,
        nargs="+",
        default=[bucketed_lstm.STEP_COST],
        help="bucketed_lstm.STEP_COST values to time",
    )
    parser.add_argument(
        "--bucket-costs",
        type=float,
        nargs="+",
        default=[bucketed_lstm.BUCKET_COST],
        help="bucketed_lstm.BUCKET_COST values to time",
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", action="append", default=[], help="PATH[,quantize=MODE]: time nlp.pipe both ways")
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    network = BiLSTMCRF(args.inputs, args.labels, hidden_width=args.hidden, depth=args.depth)
    sentences = doc_lengths(args.train_corpus, sentences=True)
    cases: Dict[str, tuple] = {"predict: dev docs in one batch": (doc_lengths(args.dev_corpus, sentences=False), False)}
    for words in (1000, 3000):
        cases[f"train: {words:,}-word batch"] = (training_batch(sentences, words, seed=words), True)
    costs = {f"buckets {step}/{bucket}": (step, bucket) for step in args.step_costs for bucket in args.bucket_costs}
    settings = ["packed", *costs]
    rows = []
    for case, (lengths, train) in cases.items():
        network.train(train)
        run = timer(network, lengths, train)

        def measure(setting: str, run=run) -> float:
            network.lstm_runs = "packed" if setting == "packed" else "auto"
            if setting != "packed":
                bucketed_lstm.STEP_COST, bucketed_lstm.BUCKET_COST = costs[setting]
            begin = time.perf_counter()
            run()
            return (time.perf_counter() - begin) * 1000

        times = in_turn(settings, args.repeats, measure, warmup=1)
        medians = {name: sorted(values)[len(values) // 2] for name, values in times.items()}
        rows.append(
            {
                "case": case,
                "rows": len(lengths),
                "tokens": sum(lengths),
                "longest": max(lengths),
                "ms": medians,
                "speedup": {name: medians["packed"] / ms for name, ms in medians.items()},
            }
        )
        print(
            f"{case} ({len(lengths)} rows, {sum(lengths):,} tokens): "
            + ", ".join(f"{name} {ms:.1f} ms" for name, ms in medians.items())
        )
    pipelines = []
    for spec in args.model:
        pipelines.append(pipeline_rates(spec, args.dev_corpus, args.repeats))
        r = pipelines[-1]
        print(
            f"nlp.pipe {r['model']} ({r['quantize']}): packed {r['words_per_second']['packed']:,.0f}, buckets "
            f"{r['words_per_second']['buckets']:,.0f} words/s ({r['speedup']:.2f}x), "
            f"labels differ {r['tokens_labelled_differently']:.4%}"
        )
    report(
        {
            "inputs": args.inputs,
            "hidden": args.hidden,
            "depth": args.depth,
            "threads": args.threads,
            "repeats": args.repeats,
            "cases": rows,
            "pipelines": pipelines,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
