"""`spacy train` with a step budget that keeps the learning-rate schedule whole.

    python -m scripts.train CONFIG --output DIR [--max-steps N] [--gpu-id G]
        [--code FILE] [--section.key value ...]

With `--max-steps 0` (the project's default) the config's own budget is
trained. With N > 0, `[training] max_steps` becomes N and so does the
schedule's `total_steps` when the config's learning rate has one, so that a
shorter (or longer) run still decays its learning rate to the end instead of
stopping half-way or idling at zero; and where N is not a multiple of
`eval_frequency`, that becomes the largest divisor of N below it, so that
the last step is evaluated (and can be model-best) whatever N is: 40 steps
of a config that evaluates every 500 evaluate at step 40, not at step 0
only. Every other override is passed to
`spacy train` as given and wins over the budget's. The training is spaCy's
own (`spacy.cli.train.train`), in this process.

With `--resumable`, the loop is spacy_crf.resumable_training's: the same
training, plus a checkpoint at every evaluation (OUTPUT/checkpoint); the same
command run again goes on from the last checkpoint and ends as an
uninterrupted run would.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from spacy.cli._util import import_code, parse_config_overrides
from spacy.cli.train import train
from spacy.util import load_config

from spacy_crf.resumable_training import budget_overrides


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("config", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--max-steps", type=int, default=0, help="0: the config's own budget")
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--code", type=Path, help="a Python file imported first (as spacy train --code)")
    parser.add_argument(
        "--resumable", action="store_true", help="checkpoint at every evaluation; resume from OUTPUT/checkpoint"
    )
    args, extra = parser.parse_known_args(argv)
    import_code(args.code)
    overrides = {**budget_overrides(args.config, args.max_steps), **parse_config_overrides(extra)}
    if args.resumable:
        train_resumably(args.config, args.output, use_gpu=args.gpu_id, overrides=overrides)
    else:
        train(args.config, args.output, use_gpu=args.gpu_id, overrides=overrides)


def train_resumably(config_path: Path, output: Path, *, use_gpu: int, overrides: Dict[str, Any]) -> None:
    """`spacy train`'s set-up (config, GPU, init_nlp), then the resumable loop."""
    from spacy.cli._util import setup_gpu
    from spacy.training.initialize import init_nlp

    from spacy_crf.resumable_training import train as resumable_train

    setup_gpu(use_gpu)
    config = load_config(config_path, overrides=overrides, interpolate=False)
    nlp = init_nlp(config, use_gpu=use_gpu)
    resumable_train(nlp, output, use_gpu=use_gpu)


if __name__ == "__main__":
    main(sys.argv[1:])
