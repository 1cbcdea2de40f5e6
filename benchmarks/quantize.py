"""What quantize = "int8" and "bf16" buy and cost: a trained crf_tagger (or
crf_morphologizer, crf_ner) in float32, int8 and bfloat16, beside spaCy's
tagger (or another baseline), on the CPU.

    python -m benchmarks.quantize training/cpu/model-best training/baseline/model-best \\
        corpus/en_ewt-ud-dev.spacy [--repeats 7] [--threads 1] [--score tag_acc] \\
        [--attr tag_] [--baseline-name "spaCy tagger"] [--modes int8 bf16] \\
        [--output metrics/speed/quantize.json]

The spacy-crf pipeline is loaded once per mode, its spacy-crf component
(called "crf_tagger" in the output, whatever its factory) with quantize = "none" and
each of `--modes` (a setting given at load time: the saved weights are the
same float32 ones). `nlp.pipe` words/s of the pipelines on the dev docs,
taken in turn on one thread, medians of the repeats; the dev score of each
(spaCy's scorer on the corpus' sentences, as `spacy evaluate --gold-preproc`),
and the share of tokens whose label each mode changes.
"""

import argparse
import statistics
from pathlib import Path
from typing import Dict, List

import spacy
import torch
from spacy.training import Corpus

from .common import (
    add_allocator_argument,
    crf_component_name,
    environment,
    pipe_rates_in_turn,
    unannotated_docs,
    use_allocator,
    write_json,
)


def dev_score(nlp, dev: str, score: str) -> float:
    examples = list(Corpus(dev, gold_preproc=True)(nlp))
    return round(100 * nlp.evaluate(examples)[score], 2)


def changed_share(plain, other, docs, attr: str) -> float:
    """The share of tokens whose predicted `attr` the other pipeline changes."""
    a = list(plain.pipe(d.copy() for d in docs))
    b = list(other.pipe(d.copy() for d in docs))
    pairs = [(str(getattr(x, attr)), str(getattr(y, attr))) for da, db in zip(a, b) for x, y in zip(da, db)]
    return round(sum(x != y for x, y in pairs) / max(1, len(pairs)), 5)


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("crf_model")
    parser.add_argument("baseline_model")
    parser.add_argument("dev")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--score", default="tag_acc")
    parser.add_argument("--attr", default="tag_", help="the token attribute compared: tag_, pos_, morph or ent_iob_")
    parser.add_argument("--baseline-name", default="spaCy tagger", help="what the baseline pipeline is called")
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["int8", "bf16"],
        choices=["int8", "bf16"],
        help="the quantize modes timed beside float32",
    )
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    component = crf_component_name(args.crf_model)
    pipelines = {
        name: spacy.load(args.crf_model, config={"components": {component: {"quantize": mode}}})
        for name, mode in [("crf_tagger", "none"), *((f"crf_tagger {m}", m) for m in args.modes)]
    }
    pipelines[args.baseline_name] = spacy.load(args.baseline_model)
    docs = unannotated_docs(pipelines["crf_tagger"], args.dev)
    rates = pipe_rates_in_turn(pipelines, docs, args.repeats)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    result = {
        "threads": args.threads,
        "repeats": args.repeats,
        "score": args.score,
        "crf_model": args.crf_model,
        "baseline_model": args.baseline_model,
        "baseline_name": args.baseline_name,
        "words_per_second": {name: round(value) for name, value in medians.items()},
        "runs": {name: [round(v) for v in values] for name, values in rates.items()},
        "dev_score": {name: dev_score(nlp, args.dev, args.score) for name, nlp in pipelines.items()},
        "changed_share": {
            mode: changed_share(pipelines["crf_tagger"], pipelines[f"crf_tagger {mode}"], docs, args.attr)
            for mode in args.modes
        },
        "environment": environment(),
    }
    print(table(result))
    write_json(result, args.output)


def table(result: Dict) -> str:
    """Markdown: words/s, its ratio to the baseline's and the dev score of each."""
    rates, scores = result["words_per_second"], result["dev_score"]
    baseline = result.get("baseline_name", "spaCy tagger")
    lines = [f"| pipeline | nlp.pipe words/s | vs {baseline} | dev {result['score']} |", "|---|---|---|---|"]
    for name in rates:
        lines.append(f"| {name} | {rates[name]:,} | {rates[name] / rates[baseline]:.2f}x | {scores[name]:.2f} |")
    lines.append("")
    changed = result["changed_share"]
    if not isinstance(changed, dict):  # records before bf16: int8 only
        changed = {"int8": changed}
    for mode, share in changed.items():
        name = f"crf_tagger {mode}"
        lines.append(
            f"{mode} against float32: {rates[name] / rates['crf_tagger']:.2f}x the words/s, "
            f"{scores[name] - scores['crf_tagger']:+.2f} dev {result['score']}, "
            f"{100 * share:.2f}% of the tokens labelled differently."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
