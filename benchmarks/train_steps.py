"""`spacy train` steps per second, start-up left out.

    python -m benchmarks.train_steps configs/cpu.cfg corpus/en_ewt-ud-train.spacy \\
        corpus/en_ewt-ud-dev.spacy [--steps 300] [--warmup 30] [--gpu-id 0] [--save DIR] [--output F]

Runs spaCy's own training loop (`train_while_improving` over
`create_train_batches`, as `spacy train` does, with the config's batcher,
dropout and optimizer) and times it from step --warmup to step --steps in
one process, so that loading, initialisation, the first batches' compiles
and saving stay out; the device is synchronised at both ends. No evaluation
runs in between. Prints one JSON line: steps/s and training words/s.
--save writes the pipeline afterwards (e.g. for a speed test of a model
trained on the GPU); --profile FILE writes cProfile's view of the timed
steps (host time: what a GPU run waits on), by own and cumulative time.
"""

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import spacy
import torch
from spacy.schemas import ConfigSchemaTraining
from spacy.training.initialize import init_nlp
from spacy.training.loop import create_train_batches, train_while_improving
from spacy.util import load_config, registry, resolve_dot_names

from .common import report


def synchronise(gpu_id: int) -> None:
    if gpu_id >= 0:
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        torch.cuda.synchronize()


def write_profile(profile: cProfile.Profile, path: Path) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumtime").print_stats(60)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    if not 0 < args.warmup < args.steps:
        parser.error("need 0 < --warmup < --steps")
    torch.set_num_threads(args.threads)
    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    overrides = {
        "paths.train": args.train,
        "paths.dev": args.dev,
        "training.max_steps": args.steps,
        "training.max_epochs": 0,
        "training.eval_frequency": 10**9,
    }
    config = load_config(args.config, overrides=overrides, interpolate=False)
    begin = time.perf_counter()
    nlp = init_nlp(config, use_gpu=args.gpu_id)
    init_seconds = time.perf_counter() - begin
    T = registry.resolve(nlp.config.interpolate()["training"], schema=ConfigSchemaTraining)
    (train_corpus,) = resolve_dot_names(nlp.config.interpolate(), [T["train_corpus"]])
    loop = train_while_improving(
        nlp,
        T["optimizer"],
        create_train_batches(nlp, train_corpus, T["batcher"], T["max_epochs"]),
        lambda: (0.0, {}),
        dropout=T["dropout"],
        accumulate_gradient=T["accumulate_gradient"],
        patience=0,
        max_steps=T["max_steps"],
        eval_frequency=T["eval_frequency"],
        exclude=T["frozen_components"],
        annotating_components=T["annotating_components"],
        before_update=T["before_update"],
    )
    start = words = None
    profile = cProfile.Profile() if args.profile else None
    for _batch, info, _ in loop:
        step = info["step"]
        if step == args.warmup:
            synchronise(args.gpu_id)
            start, words = time.perf_counter(), info["words"]
            if profile:
                profile.enable()
        if step == args.steps:
            synchronise(args.gpu_id)
            seconds = time.perf_counter() - start
            if profile:
                profile.disable()
                write_profile(profile, args.profile)
            n_steps, n_words = args.steps - args.warmup, info["words"] - words
            break
    else:
        sys.exit(f"the training loop stopped before step {args.steps}")
    result = {
        "config": args.config,
        "gpu_id": args.gpu_id,
        "device": torch.cuda.get_device_name() if args.gpu_id >= 0 else "cpu",
        "steps": n_steps,
        "seconds": round(seconds, 3),
        "steps_per_second": round(n_steps / seconds, 3),
        "words_per_second": round(n_words / seconds),
        "init_seconds": round(init_seconds, 1),
    }
    report(result, args.output)
    if args.save:
        nlp.to_disk(args.save)


if __name__ == "__main__":
    main()
