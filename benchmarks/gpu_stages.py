"""Where a crf_tagger's predict spends its time, stage by stage (GPU or CPU).

    python -m benchmarks.gpu_stages corpus/en_ewt-ud-dev.spacy \\
        [--model training/cpu/model-best | --config configs/cpu.cfg --init-corpus corpus/en_ewt-ud-train.spacy] \\
        [--gpu-id 0] [--repeats 10] [--profile] [--quantize int8|bf16] [--output metrics/speed/gpu_stages.json]

The corpus' docs go through the component's model in one batch of
--batch-size docs: tok2vec, tok2vec + network (the CRF's scores), Viterbi
decode, and the whole `predict` and `set_annotations`; medians of
synchronised runs. With --config (no trained model at hand) the pipeline is
initialized on --init-corpus (timings hardly depend on the weights). The
model's tok2vec must be its own (not a listener of a shared component).
--profile adds cProfile's top functions of one tok2vec call and one predict
(host time: what a GPU run waits on), and counts torch's device-to-host
synchronisations in one predict (torch.cuda.set_sync_debug_mode).
"""

import argparse
import cProfile
import io
import json
import pstats
import warnings
from pathlib import Path
from typing import Callable, Dict

import spacy
import torch
from thinc.api import get_current_ops
from threadpoolctl import threadpool_limits

from spacy_crf.nn.kernels.dispatch import kernel_mode

from .common import median_ms, unannotated_docs, write_json


def top_functions(fn: Callable[[], object], n: int = 25) -> str:
    profile = cProfile.Profile()
    profile.enable()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(n)
    return out.getvalue()


def load_pipeline(args: argparse.Namespace):
    settings = {"components": {"crf_tagger": {"quantize": args.quantize}}}
    if args.model:
        return spacy.load(args.model, config=settings)
    config = spacy.util.load_config(args.config).merge(settings)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = list(spacy.training.Corpus(args.init_corpus, gold_preproc=True, limit=args.init_docs)(nlp))
    nlp.initialize(lambda: examples)
    return nlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--model")
    parser.add_argument("--config")
    parser.add_argument("--init-corpus")
    parser.add_argument("--init-docs", type=int, default=300)
    parser.add_argument("--gpu-id", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--quantize", default="none", choices=["none", "int8", "bf16"], help="the component's quantize")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if bool(args.model) == bool(args.config) or (args.config and not args.init_corpus):
        parser.error("give --model, or --config with --init-corpus")
    torch.set_num_threads(1)
    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    nlp = load_pipeline(args)
    tagger = nlp.get_pipe("crf_tagger")
    model = tagger.model
    docs = unannotated_docs(nlp, args.corpus)[: args.batch_size]
    if not docs:
        parser.error(f"no docs in {args.corpus}")
    n_words = sum(len(doc) for doc in docs)
    tok2vec = model.get_ref("tok2vec")
    result: Dict[str, object] = {
        "device": torch.cuda.get_device_name() if args.gpu_id >= 0 else "cpu",
        "ops": type(get_current_ops()).__name__,
        "quantize": args.quantize,
        "kernels": kernel_mode(),  # SPACY_CRF_KERNELS: "auto", or "torch" to time torch's code
        "n_docs": len(docs),
        "n_words": n_words,
        "longest_doc": max(len(doc) for doc in docs),
    }
    stages = {
        "tok2vec": lambda: tok2vec.predict(docs),
        "tok2vec + network": lambda: model.predict(docs).raw,  # packed on the CPU, as predict leaves it
        "decode (Viterbi)": None,
        "predict": lambda: tagger.predict(docs),
        "set_annotations": None,
    }
    batch = model.predict(docs)
    stages["decode (Viterbi)"] = lambda: batch.decode()
    prediction = tagger.predict(docs)
    stages["set_annotations"] = lambda: tagger.set_annotations(docs, prediction)  # the same values each time
    device = "cuda" if args.gpu_id >= 0 else "cpu"
    with threadpool_limits(limits=1, user_api="blas"):  # numpy's BLAS, as in the component's scope
        times = {name: median_ms(fn, args.repeats, device) for name, fn in stages.items()}
    result["ms"] = {name: round(t, 3) for name, t in times.items()}
    result["tok2vec_words_per_second"] = round(n_words / times["tok2vec"] * 1000)
    result["predict_words_per_second"] = round(n_words / times["predict"] * 1000)
    for name, t in times.items():
        print(f"{name:20s} {t:9.2f} ms")
    print(json.dumps({k: v for k, v in result.items() if k != "ms"}))
    if args.profile:
        result["profile_tok2vec"] = top_functions(lambda: tok2vec.predict(docs))
        result["profile_predict"] = top_functions(lambda: tagger.predict(docs))
        print(result["profile_tok2vec"])
        print(result["profile_predict"])
        if torch.cuda.is_available():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.cuda.set_sync_debug_mode("warn")
                try:
                    tagger.predict(docs)
                finally:
                    torch.cuda.set_sync_debug_mode(0)
            syncs = [str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message)]
            result["torch_synchronisations_in_predict"] = len(syncs)
            print(f"torch synchronisations in one predict: {len(syncs)}")
    write_json(result, args.output)


if __name__ == "__main__":
    main()
