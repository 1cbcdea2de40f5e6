"""Command line: `python -m spacy_crf tag MODEL INPUT OUTPUT [options]`,
`python -m spacy_crf calibrate MODEL DEV [options]`, `python -m spacy_crf
distill TEACHER STUDENT_CONFIG --output DIR [overrides]`, `python -m spacy_crf
debug-data CONFIG [overrides]` and `python -m spacy_crf displacy MODEL DATA OUTPUT`."""

import argparse
import json
from typing import List, Optional, cast

from wasabi import msg


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spacy_crf", description="spacy-crf commands")
    commands = parser.add_subparsers(dest="command", required=True)
    tag = commands.add_parser(
        "tag",
        help="tag a corpus with a spaCy pipeline (local or Ray), resumably",
        description=(
            "Tag every document of INPUT (a file or a folder: JSON Lines, plain text with one "
            "document per line, Parquet, spaCy DocBin) with the pipeline MODEL and write the "
            "output shard by shard into the folder OUTPUT. Rerun the same command to resume."
        ),
    )
    tag.add_argument("model", help="pipeline folder or installed package name")
    tag.add_argument("input", help="input file or folder of files")
    tag.add_argument("output", help="output folder")
    tag.add_argument("--engine", choices=["local", "ray"], default="local")
    tag.add_argument("--workers", type=int, default=1, help="processes (local) or Ray actors (ray)")
    tag.add_argument("--gpus-per-worker", type=float, default=0.0, help="GPUs per worker; > 0 tags on GPU")
    tag.add_argument("--batch-size", type=int, default=64, help="documents per nlp.pipe batch and per unit of work")
    tag.add_argument("--shard-size", type=int, default=10000, help="records per output shard")
    tag.add_argument("--address", default=None, help="Ray cluster to join, e.g. auto or HOST:6379 (default: start one)")
    tag.add_argument("--runtime-env", default=None, help="Ray runtime environment as JSON, when Ray is started here")
    tag.add_argument(
        "--on-error",
        choices=["skip", "raise"],
        default="skip",
        help="what a record that cannot be read, tagged or written does: skip (reported in "
        "OUTPUT/bad_records/) or raise",
    )
    tag.add_argument(
        "--input-format",
        choices=["jsonl", "text", "parquet", "docbin"],
        default=None,
        help="default: from each file's suffix (.jsonl, .txt, .parquet, .spacy)",
    )
    tag.add_argument("--output-format", choices=["docbin", "parquet", "jsonl"], default="docbin")
    tag.add_argument("--text-field", default="text", help="JSON field or Parquet column of the text")
    tag.add_argument("--id-field", default="id", help="JSON field or Parquet column of the document id")
    tag.add_argument("--max-shards", type=int, default=None, help="stop after this many shards (rerun to go on)")
    tag.add_argument(
        "--overwrite",
        action="store_true",
        help="start over: delete an earlier job's shards, bad records and manifest in OUTPUT first "
        "(needed when INPUT changed)",
    )
    tag.add_argument("--no-progress", action="store_true", help="no progress bar")
    calibrate = commands.add_parser(
        "calibrate",
        help="fit the temperature of a CRF component's probabilities on annotated docs",
        description=(
            "Fit the temperature tau of the CRF's probabilities, P(y|x) proportional to "
            "exp(Score(x, y) / tau), on the annotated docs DEV by minimizing the negative "
            "log-likelihood of their gold labels (or, --objective entities, the log loss of the "
            "decoded entities' posteriors); save it in the component's cfg (in MODEL, or "
            "in a copy of the pipeline at --output) and print the NLL, ECE and Brier score "
            "before and after. The predicted labels do not change."
        ),
    )
    calibrate.add_argument("model", help="pipeline folder (or installed package name, with --output)")
    calibrate.add_argument("dev", help="annotated docs: a .spacy file or a folder of them")
    calibrate.add_argument(
        "--output", default=None, help="save the calibrated pipeline in this folder (default: update MODEL in place)"
    )
    calibrate.add_argument(
        "--gold-preproc",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="read DEV on its gold tokens, one sentence per doc, as spacy evaluate does",
    )
    calibrate.add_argument(
        "--component",
        default=None,
        help="the component to calibrate, a crf_tagger, crf_morphologizer or crf_ner (default: the only one)",
    )
    calibrate.add_argument("--batch-size", type=int, default=64, help="docs per model call")
    calibrate.add_argument("--gpu-id", type=int, default=-1, help="GPU to run on; -1 for the CPU")
    calibrate.add_argument(
        "--objective",
        choices=["tokens", "entities"],
        default="tokens",
        help="minimise the gold labels' NLL (tokens), or, for crf_ner, the log loss "
        "of the decoded entities' posteriors (entities)",
    )
    calibrate.add_argument("--dry-run", action="store_true", help="fit and print, save nothing")
    debug = commands.add_parser(
        "debug-data",
        help="spacy debug data, with its tag, morph and entity checks for crf components",
        description=(
            "Run spaCy's `debug data` on CONFIG with each crf_tagger, crf_morphologizer and crf_ner "
            "swapped for spaCy's tagger, morphologizer and ner (spaCy runs those checks only for "
            "components of its own factory names; they read the data, not the model). Config "
            "overrides such as --paths.train FILE follow CONFIG, as for spaCy's command."
        ),
    )
    debug.add_argument("config", help="the training config")
    debug.add_argument("--verbose", "-V", action="store_true", help="print more about the data")
    distill = commands.add_parser(
        "distill",
        help="train a student pipeline from a teacher pipeline's exact CRF posteriors",
        description=(
            "Build the student from STUDENT_CONFIG with the labels of TEACHER's CRF components and "
            "train it to the teacher's distribution over label paths (the exact KL divergence) on the "
            "train corpus's docs (their annotation is not read) and any --text; the teacher's scores "
            "are cached in OUTPUT/teacher_scores. Dev is scored on gold; model-best and model-last are "
            "saved as spacy train saves them; the same command again resumes. Config overrides such "
            "as --paths.train FILE --paths.dev FILE follow, as for spacy train."
        ),
    )
    distill.add_argument("teacher", help="the teacher pipeline: folder or installed package name")
    distill.add_argument("config", help="the student's training config")
    distill.add_argument("--output", "-o", required=True, help="output folder")
    distill.add_argument(
        "--text",
        action="append",
        default=[],
        help="raw text added to the training docs: .txt (a doc per line), .jsonl (a text field), "
        ".spacy (docs); repeatable",
    )
    distill.add_argument(
        "--max-steps",
        type=int,
        default=0,
        help="the step budget, with the learning-rate schedule's total_steps (0: the config's own)",
    )
    distill.add_argument("--gpu-id", type=int, default=-1, help="GPU to run on; -1 for the CPU")
    distill.add_argument("--no-progress", action="store_true", help="no progress bar between evaluations")
    displacy = commands.add_parser(
        "displacy",
        help="render a pipeline's entities on annotated texts as HTML (spacy evaluate --displacy-path)",
        description=(
            "Tag the texts of the first LIMIT docs of DATA with MODEL and write OUTPUT/entities.html "
            "with displaCy, as `spacy evaluate --displacy-path` does for spaCy's ner (it renders "
            "nothing for crf_ner, whose factory name it does not know)."
        ),
    )
    displacy.add_argument("model", help="pipeline folder or installed package name")
    displacy.add_argument("data", help="a .spacy file or a folder of them")
    displacy.add_argument("output", help="output folder")
    displacy.add_argument("--limit", type=int, default=25, help="docs to render")
    displacy.add_argument(
        "--gold-preproc",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="read DATA on its gold tokens, one sentence per doc",
    )
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args, extra = _parser().parse_known_args(argv)
    if args.command == "debug-data":
        from spacy.cli._util import parse_config_overrides

        from .spacy_commands import debug_data

        return debug_data(args.config, parse_config_overrides(extra), verbose=args.verbose)
    if args.command == "distill":
        return _distill(args, extra)
    if extra:
        _parser().error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "displacy":
        from .spacy_commands import render_entities

        path = render_entities(args.model, args.data, args.output, limit=args.limit, gold_preproc=args.gold_preproc)
        msg.good(f"Rendered the entities of {args.limit} docs", str(path))
        return 0
    if args.command == "calibrate":
        return _calibrate(args)
    return _tag(args)


def _distill(args: argparse.Namespace, extra: List[str]) -> int:
    """`python -m spacy_crf distill`."""
    from pathlib import Path

    from spacy.cli._util import parse_config_overrides

    from ..distill import distill
    from ..resumable_training import budget_overrides

    try:
        distill(
            args.teacher,
            Path(args.config),
            Path(args.output),
            overrides={**budget_overrides(Path(args.config), args.max_steps), **parse_config_overrides(extra)},
            texts=[Path(path) for path in args.text],
            use_gpu=args.gpu_id,
            progress=not args.no_progress,
        )
    except (ValueError, OSError) as err:
        msg.fail(str(err))
        return 1
    return 0


def _tag(args: argparse.Namespace) -> int:
    """`python -m spacy_crf tag`."""
    from ..corpus import BadRecordError, tag_corpus

    try:
        summary = tag_corpus(
            args.model,
            args.input,
            args.output,
            engine=args.engine,
            workers=args.workers,
            gpus_per_worker=args.gpus_per_worker,
            batch_size=args.batch_size,
            shard_size=args.shard_size,
            input_format=args.input_format,
            output_format=args.output_format,
            text_field=args.text_field,
            id_field=args.id_field,
            on_error=args.on_error,
            address=args.address,
            runtime_env=json.loads(args.runtime_env) if args.runtime_env else None,
            max_shards=args.max_shards,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except (BadRecordError, ValueError, ImportError) as err:
        msg.fail(str(err))
        return 1
    msg.good(
        f"Tagged {summary.docs:,} docs, {summary.words:,} words in {summary.seconds:.1f} s "
        f"({summary.words_per_second:,.0f} words/s); shards written {summary.shards_written} (of which redone "
        f"{summary.shards_redone}), skipped (complete) {summary.shards_skipped} of {summary.shards}; bad records "
        f"{summary.bad_records}" + (f", reported in {summary.output}/bad_records/" if summary.bad_records else "")
    )
    print(json.dumps(summary.to_dict()))
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    """`python -m spacy_crf calibrate`: fit, save, print a before/after table
    and, last, the numbers as one line of JSON."""
    import spacy

    from ..calibrate import calibrate

    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    try:
        result = calibrate(
            args.model,
            args.dev,
            output=args.output,
            gold_preproc=args.gold_preproc,
            component=args.component,
            batch_size=args.batch_size,
            write=not args.dry_run,
            objective=args.objective,
        )
    except (ValueError, OSError) as err:
        msg.fail(str(err))
        return 1
    before, after = result.before.metrics(), result.after.metrics()
    rows = [
        ("NLL / gold token", "nll"),
        ("token ECE", "token_ece"),
        ("token Brier", "token_brier"),
        ("token accuracy", "token_accuracy"),
    ]
    if "ents_ece" in after:
        rows += [("entity ECE", "ents_ece"), ("entity Brier", "ents_brier"), ("entity precision", "ents_precision")]
    # the fitted objective first, marked: the summed loss the search minimised
    fitted = result.fit.nll
    if args.objective == "entities":
        before["ents_log_loss"] = fitted.get(cast(float, before["temperature"]))  # always set
        after["ents_log_loss"] = fitted.get(cast(float, after["temperature"]))
        rows.insert(0, ("entity log loss, summed (fitted)", "ents_log_loss"))
    else:
        rows[0] = ("NLL / gold token (fitted)", "nll")

    def shown(value: Optional[float]) -> str:
        return "-" if value is None else f"{value:.4f}"

    msg.table(
        [(title, shown(before[key]), shown(after[key])) for title, key in rows],
        header=("", f"before (tau={before['temperature']:.4g})", f"after (tau={after['temperature']:.4g})"),
        divider=True,
        aligns=("l", "r", "r"),
    )
    if result.fit.at_edge:
        msg.warn(f"tau = {after['temperature']:.4g} is at an end of the searched range: the NLL may fall further")
    if result.n_unknown_labels:
        msg.warn(
            f"{result.n_unknown_labels:,} tokens have a gold label that component '{result.name}' does not "
            "have: summed over in the NLL, wrong in ECE and Brier"
        )
    where = f"saved in {result.written}" if result.written is not None else "not saved (--dry-run)"
    msg.good(
        f"Component '{result.name}': temperature {after['temperature']:.4g} from {result.n_docs:,} docs, "
        f"{result.n_gold_tokens:,} gold tokens; {where}"
    )
    print(json.dumps(result.to_dict()))
    return 0
