"""The CPU Viterbi: torch's code against Numba's fused loops
(spacy_crf.nn.kernels.numba_viterbi), on the CRF scores of trained pipelines.

    python -m benchmarks.cpu_viterbi MODEL DEV.spacy [MODEL DEV.spacy ...] \\
        [--quantize none|int8|bf16] [--repeats 7] [--threads 1] [--allocator steady] \\
        [--output metrics/speed/cpu_viterbi.json]

For each pipeline and its dev corpus:
1. the scores of one batch of every dev doc (the model's `predict`), padded,
   decoded by torch's code (`SPACY_CRF_KERNELS=torch`) and by Numba's loops
   in turn: median ms, and whether the paths and their scores are identical;
   then Numba's loops straight from the packed emissions (what `predict`
   decodes on the CPU), median ms;
2. `nlp.pipe` words/s (batch 256), in turn: "torch" (the emissions padded,
   torch's Viterbi: spacy-crf 0.3.0's path), "numba, padded" (the network's
   `packed` argument dropped, so that it pads as in training) and "numba"
   (packed, the default), medians of the rounds, and the share of tokens
   labelled differently from "torch".
"""

import argparse
import contextlib
import os
import statistics
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import spacy
import torch
from thinc.api import ArgsKwargs

from spacy_crf.nn import PackedScores
from spacy_crf.nn.kernels import dispatch

from .common import (
    add_allocator_argument,
    crf_component_name,
    in_turn,
    median_ms,
    token_labels,
    unannotated_docs,
    use_allocator,
    words_per_second,
    write_json,
)

CODES = {"torch": "torch", "numba": "numba"}  # decoder -> SPACY_CRF_KERNELS
# nlp.pipe variants -> (SPACY_CRF_KERNELS, packed emissions)
VARIANTS = {"torch": ("torch", True), "numba, padded": ("numba", False), "numba": ("numba", True)}


@contextlib.contextmanager
def emissions(nlp, packed: bool) -> Iterator[None]:
    """Inside the block, `predict` keeps the emissions packed (the default)
    or pads them (the network's `packed` argument dropped)."""
    wrapper = nlp.get_pipe(crf_component_name(nlp)).model.get_ref("output_layer").layers[0]
    convert = wrapper.attrs["convert_inputs"]

    def padded(model, X, is_train):
        inputs, backprop = convert(model, X, is_train)
        return ArgsKwargs(args=inputs.args, kwargs={}), backprop

    if not packed:
        wrapper.attrs["convert_inputs"] = padded
    try:
        yield
    finally:
        wrapper.attrs["convert_inputs"] = convert


def measure(model: str, corpus: str, quantize: str, repeats: int) -> Dict:
    name = crf_component_name(model)
    nlp = spacy.load(model, config={"components": {name: {"quantize": quantize}}})
    docs = unannotated_docs(nlp, corpus)
    batch = nlp.get_pipe(name).model.predict(docs)
    packed = batch.raw if isinstance(batch.raw, PackedScores) else None
    scores = batch.scores  # padded
    results = {code: dispatch.viterbi_decode(scores, kernels=code) for code in CODES}
    torch_paths, torch_best = results["torch"]
    numba_paths, numba_best = results["numba"]
    decode_ms = {
        code: round(median_ms(lambda code=code: dispatch.viterbi_decode(scores, kernels=code), repeats), 2)
        for code in CODES
    }
    if packed is not None:
        assert torch.equal(dispatch.viterbi_decode_packed(packed)[0], numba_paths)
        decode_ms["numba, packed"] = round(median_ms(lambda: dispatch.viterbi_decode_packed(packed), repeats), 2)

    def run(variant: str, measure):
        code, keep_packed = VARIANTS[variant]
        os.environ["SPACY_CRF_KERNELS"] = code
        with emissions(nlp, keep_packed):
            return measure()

    saved = os.environ.get("SPACY_CRF_KERNELS")
    try:
        rates = in_turn(
            VARIANTS,
            repeats,
            lambda v: run(v, lambda: words_per_second(nlp, docs, repeats=1, batch_size=256)[0]),
            warmup=1,
        )
        outputs = {variant: run(variant, lambda: token_labels(nlp, docs)) for variant in VARIANTS}
    finally:
        if saved is None:
            os.environ.pop("SPACY_CRF_KERNELS", None)
        else:
            os.environ["SPACY_CRF_KERNELS"] = saved
    differ = max(sum(a != b for a, b in zip(outputs["torch"], outputs[v])) for v in VARIANTS)
    B, T, K = scores.emissions.shape
    return {
        "model": model,
        "corpus": corpus,
        "quantize": quantize,
        "shape": [B, T, K],
        "n_words": int(scores.mask.sum()),
        "transitions": "factored" if scores.classes is not None else "full",
        "same_paths": bool(torch.equal(torch_paths, numba_paths)),
        "same_scores": bool(torch.equal(torch_best, numba_best)),
        "decode_ms": decode_ms,
        "words_per_second": {code: round(statistics.median(values), 1) for code, values in rates.items()},
        "runs": {code: [round(v, 1) for v in values] for code, values in rates.items()},
        "tokens_labelled_differently": differ / max(1, len(outputs["torch"])),
    }


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", metavar="MODEL DEV.spacy", help="pipelines and their dev corpora, in pairs")
    parser.add_argument("--quantize", default="none", choices=["none", "int8", "bf16"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error("give MODEL DEV.spacy in pairs")
    torch.set_num_threads(args.threads)
    use_allocator(args.allocator)
    rows = [
        measure(model, corpus, args.quantize, args.repeats) for model, corpus in zip(args.pairs[::2], args.pairs[1::2])
    ]
    result = {"threads": args.threads, "repeats": args.repeats, "rows": rows}
    for row in rows:
        print(
            f"{row['model']} {tuple(row['shape'])} {row['transitions']}: decode ms {row['decode_ms']}; "
            f"nlp.pipe {row['words_per_second']}; same paths {row['same_paths']}, "
            f"differ {row['tokens_labelled_differently']:.4%}"
        )
    write_json(result, args.output)


if __name__ == "__main__":
    main()
