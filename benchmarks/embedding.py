"""What the embedding's two CPU paths buy: numpy's BLAS for its matrix
products, and predicting once per distinct token.

    python -m benchmarks.embedding training/cpu/model-best corpus/en_ewt-ud-dev.spacy \\
        [--quantize none|int8|bf16] [--repeats 5] [--threads 1] [--rows 1130] \\
        [--output metrics/speed/embedding.json]

1. The products of the Maxout that mixes the features, at the shape of a
   batch's distinct words (`--rows`, the model's own input and output widths),
   with Thinc's default NumpyOps (BLIS) and with `spacy_crf.ml.host_blas`'s
   (numpy's BLAS): median ms.
2. `nlp.pipe` words/s of the trained pipeline with the embedding on BLIS over
   every token (spacy-crf 0.3.0), on numpy's BLAS over every token, and on
   numpy's BLAS once per distinct token (the default), taken in turn, medians;
   and the share of tokens whose label differs from the first.
"""

import argparse
import contextlib
import statistics
from pathlib import Path
from typing import Dict, Iterator, List

import numpy
import spacy
import torch
from spacy.language import Language
from thinc.api import Model, NumpyOps
from threadpoolctl import threadpool_limits

import spacy_crf.ml.distinct_tokens as distinct_tokens
from spacy_crf.ml.host_blas import HOST_BLAS_OPS

from .common import (
    environment,
    in_turn,
    median_ms,
    unannotated_docs,
    words_per_second,
    write_json,
)

VARIANTS = ("BLIS, every token", "numpy BLAS, every token", "numpy BLAS, per distinct token")


def products_ms(mix: Model, rows: int, repeats: int) -> Dict[str, Dict[str, float]]:
    """Median ms of the Maxout's three products on each backend."""
    n_in, n_out = mix.get_dim("nI"), mix.get_dim("nO") * mix.get_dim("nP")
    rng = numpy.random.default_rng(0)
    X = rng.standard_normal((rows, n_in)).astype("f")
    W = rng.standard_normal((n_out, n_in)).astype("f")
    dY = rng.standard_normal((rows, n_out)).astype("f")
    products = {
        "forward X @ W.T": lambda ops: ops.gemm(X, W, trans2=True),
        "backward dY.T @ X": lambda ops: ops.gemm(dY, X, trans1=True),
        "backward dY @ W": lambda ops: ops.gemm(dY, W),
    }
    backends = {"thinc_blis": NumpyOps(), "numpy_blas": HOST_BLAS_OPS}
    return {
        name: {
            key: round(median_ms(lambda product=product, ops=ops: product(ops), repeats), 3)
            for key, ops in backends.items()
        }
        for name, product in products.items()
    }


@contextlib.contextmanager
def variant(embed: Model, name: str) -> Iterator[None]:
    """The embedding run as in `name` (one of VARIANTS) inside the block."""
    saved = [(node, node.ops) for node in embed.walk()]
    real = distinct_tokens.distinct_tokens
    if name.startswith("BLIS"):
        for node, _ in saved:
            node.ops = NumpyOps()
    if name.endswith("every token"):
        distinct_tokens.distinct_tokens = lambda *args: None
    try:
        yield
    finally:
        distinct_tokens.distinct_tokens = real
        for node, ops in saved:
            node.ops = ops


def labels(nlp: Language, docs, attr: str) -> List[str]:
    return [getattr(token, attr) for doc in nlp.pipe(d.copy() for d in docs) for token in doc]


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("dev")
    parser.add_argument("--quantize", default="none", choices=["none", "int8", "bf16"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--rows",
        type=int,
        default=1130,
        help="distinct words of a batch, for the products (1,130: a batch of 256 EWT dev sentences)",
    )
    parser.add_argument("--attr", default="tag_", help="the token attribute compared: tag_, pos_, morph")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.model, config={"components": {"crf_tagger": {"quantize": args.quantize}}})
    embed = nlp.get_pipe("crf_tagger").model.get_ref("tok2vec")
    mix = next(node for node in embed.walk() if node.name == "maxout")
    with threadpool_limits(limits=args.threads, user_api="blas"):
        ms = products_ms(mix, args.rows, max(10, 6 * args.repeats))
    docs = unannotated_docs(nlp, args.dev)

    def rate(name: str) -> float:
        with variant(embed, name):
            return words_per_second(nlp, docs, repeats=1, batch_size=256)[0]

    rates = in_turn(VARIANTS, args.repeats, rate)
    with variant(embed, VARIANTS[0]):
        before = labels(nlp, docs, args.attr)
    after = labels(nlp, docs, args.attr)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    result = {
        "model": args.model,
        "quantize": args.quantize,
        "threads": args.threads,
        "repeats": args.repeats,
        "products": {
            "rows": args.rows,
            "n_in": mix.get_dim("nI"),
            "n_out": mix.get_dim("nO") * mix.get_dim("nP"),
            "ms": ms,
            "speedup": {k: round(v["thinc_blis"] / v["numpy_blas"], 2) for k, v in ms.items()},
        },
        "words_per_second": {name: round(value) for name, value in medians.items()},
        "runs": {name: [round(v) for v in values] for name, values in rates.items()},
        "changed_share": sum(a != b for a, b in zip(before, after)) / max(1, len(before)),
        "environment": environment(),
    }
    print(table(result))
    write_json(result, args.output)


def table(result: Dict) -> str:
    """The two Markdown tables of a result."""
    products = result["products"]
    lines = [
        f"{products['rows']} rows, {products['n_in']} features in, {products['n_out']} out, median ms:",
        "",
        "| product | Thinc's BLIS | numpy's BLAS | speed-up |",
        "|---|---|---|---|",
    ]
    for name, ms in products["ms"].items():
        lines.append(f"| {name} | {ms['thinc_blis']:.2f} | {ms['numpy_blas']:.2f} | {products['speedup'][name]:.2f}x |")
    first = result["words_per_second"][VARIANTS[0]]
    lines += [
        "",
        f"`{result['model']}`, quantize {result['quantize']}, `nlp.pipe` words/s:",
        "",
        "| embedding | words/s | vs BLIS, every token |",
        "|---|---|---|",
    ]
    for name, value in result["words_per_second"].items():
        lines.append(f"| {name} | {value:,} | {value / first:.2f}x |")
    lines += ["", f"Tokens labelled differently from BLIS, every token: {100 * result['changed_share']:.2f}%."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
