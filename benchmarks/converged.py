"""Train one pipeline of a comparison until its dev score stops rising, and record the run.

    python -m benchmarks.converged CONFIG --train TRAIN.spacy --dev-select A.spacy \\
        --dev-score B.spacy --encoder assets/all-MiniLM-L6-v2 --seed 0 --output training/converged/NAME

The protocol, chosen once before any run and the same for every head (the
CRF's and spaCy's pipelines differ only in their last component):
- Adam as in the trf_*.cfg (grad_clip 1.0, L2 0.01), `spacy.batch_by_padded.v1`
  of 2000 padded tokens, dropout 0.1: the values of spaCy's transformer
  quickstart (`spacy init config --gpu`), which both configs already share.
- Learning rate 1e-4 after 100 warm-up steps, linear decay to 0 at the cap:
  spaCy's quickstart uses 5e-5 for base-size encoders over 20,000 steps; a
  6-layer, 384-wide encoder (all-MiniLM-L6-v2) fine-tunes at 1e-4 in its own
  practice (sentence-transformers fine-tuning and the MiniLM paper use
  5e-5 to 1e-4 for the small models), and 2 CPU cores afford hundreds of
  steps, not tens of thousands.
- The dev score (`[training.score_weights]`: ents_f, tag_acc, ...) on
  DEV_SELECT every 50 steps, spaCy's patience of 500 steps without a new best
  (about 15 epochs of 10% of UNER train), and a cap of 3000 steps that
  patience should reach first: a run the cap stopped is recorded as such and
  is not converged.
- model-best (chosen on DEV_SELECT) is scored on DEV_SCORE, which took no
  part in the choice.

OUTPUT/run.json records the run: steps run, the best step and its score on
DEV_SELECT, what stopped it ("patience" or "cap") and whether it converged,
the score on DEV_SCORE, every evaluation (step and score), wall and CPU
seconds. The trained pipelines stay in OUTPUT (not
committed); run.json is what the tables read.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.common import environment

PROTOCOL = {
    "learn_rate": 1e-4,
    "warmup_steps": 100,
    "eval_frequency": 50,
    "patience": 500,
    "max_steps": 3000,
}


def stopped_by(last_step: int, best_step: int, *, patience: int, max_steps: int) -> str:
    """ "cap" when the run reached max_steps before patience ran out, else "patience"."""
    if last_step >= max_steps and last_step - best_step < patience:
        return "cap"
    return "patience"


def read_log(path: Path) -> List[Dict[str, Any]]:
    """The evaluations of ConsoleLogger.v3's JSON Lines log: step and score.
    A resumed run's earlier segments (log.1.jsonl, log.2.jsonl, ... beside
    log.jsonl) come first; a step evaluated again after a resume keeps its
    later row (a resumed run evaluates it to the same score)."""
    segments = sorted(path.parent.glob(f"{path.stem}.*{path.suffix}"), key=lambda p: int(p.suffixes[-2][1:]))
    rows: Dict[int, Dict[str, Any]] = {}
    for segment in [*segments, path]:
        if not segment.exists():
            continue
        for line in segment.read_text(encoding="utf8").split("\n"):
            if line.strip():
                entry = json.loads(line)
                rows[entry["step"]] = {
                    "step": entry["step"],
                    "score": entry["score"],
                    "scores": entry.get("scores", {}),
                }
    return [rows[step] for step in sorted(rows)]


def read_evaluations(output: Path, log: Path) -> List[Dict[str, Any]]:
    """Every evaluation of the run: a resumable run's checkpoint keeps them
    all (a killed segment's log file may lack its last rows), else the log."""
    state = output / "checkpoint" / "state.json"
    if not state.exists():
        return read_log(log)
    rows = json.loads(state.read_text())["evaluations"]
    return [{"step": row["step"], "score": row["score"], "scores": row["scores"]} for row in rows]


def keep_log_segment(log: Path) -> None:
    """Move a resumed run's log aside as its next segment (spaCy's logger
    does not append to an existing file)."""
    if log.exists():
        n = 1 + sum(1 for _ in log.parent.glob(f"{log.stem}.*{log.suffix}"))
        log.rename(log.with_name(f"{log.stem}.{n}{log.suffix}"))


def score_on(model: Path, dev: Path, gpu_id: int = -1) -> Dict[str, Any]:
    """spaCy's scores of a pipeline on a corpus, read as its training read
    its dev corpus (gold_preproc or not: the config's), on GPU `gpu_id`
    (-1: the CPU)."""
    import spacy
    from spacy.scorer import Scorer
    from spacy.training import Corpus
    from spacy.training.corpus import walk_corpus

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    nlp = spacy.load(model)
    gold_preproc = bool(nlp.config["corpora"]["dev"].get("gold_preproc", False))
    # the examples as Corpus makes them (one per sentence with gold_preproc), grouped by the doc they came from
    corpus = Corpus(dev, gold_preproc=gold_preproc)
    make = corpus.make_examples_gold_preproc if gold_preproc else corpus.make_examples
    groups = [list(make(nlp, [doc])) for doc in corpus.read_docbin(nlp.vocab, walk_corpus(dev, ".spacy"))]
    groups = [group for group in groups if group]
    examples = [eg for group in groups for eg in group]
    # predicted once, then scored as nlp.evaluate scores (which predicts copies, leaving `examples` unannotated)
    start = time.perf_counter()
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        eg.predicted = doc
    seconds = time.perf_counter() - start
    scores = Scorer(nlp=nlp).score(examples)
    scores["speed"] = sum(len(eg.predicted) for eg in examples) / max(seconds, 1e-9)
    result = {key: value for key, value in scores.items() if isinstance(value, (int, float))}
    per_doc = per_doc_counts(examples, counted_score(result))
    # one row per dev doc: a doc's sentences are not independent draws for the bootstrap
    rows = iter(per_doc["counts"])
    per_doc["counts"] = [[sum(column) for column in zip(*[next(rows) for _ in group])] for group in groups]
    reported = result.get(per_doc["score"])
    if reported is not None and abs(pooled_score(per_doc) - reported) > 1e-9:
        # kept, for the record; benchmarks.converged_report leaves such counts out of the bootstrap
        print(f"per-doc counts pool to {pooled_score(per_doc)}, not {per_doc['score']} = {reported}", file=sys.stderr)
    result["per_doc"] = per_doc
    return result


def pooled_score(per_doc: Dict[str, Any]) -> float:
    """The corpus score the per-doc counts add up to: F1 of the pooled
    (tp, fp, fn) for ents_f, correct / gold for tag_acc and pos_acc."""
    totals = [sum(column) for column in zip(*per_doc["counts"])]
    if per_doc["score"] == "ents_f":
        tp, fp, fn = totals or (0, 0, 0)
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    correct, gold = totals or (0, 0)
    return correct / gold if gold else 0.0


# the token scores with per-doc counts: the aligned attribute and the token's
TOKEN_SCORES = {"tag_acc": ("TAG", "tag_"), "pos_acc": ("POS", "pos_")}


def counted_score(scores: Dict[str, Any]) -> str:
    """The score whose per-doc counts a run records: ents_f, else tag_acc,
    else pos_acc (a morphologizer's UPOS)."""
    return next((key for key in ("ents_f", *TOKEN_SCORES) if key in scores), "tag_acc")


def per_doc_counts(examples: List[Any], score: str) -> Dict[str, Any]:
    """Each dev doc's counts, for a paired bootstrap over docs: for ents_f
    (true positives, false positives, false negatives) of entities matched
    on characters and label, as spaCy's scorer matches them; for tag_acc
    and pos_acc (correct, gold) tokens, aligned as spaCy's scorer aligns them."""
    counts = []
    for eg in examples:
        if score == "ents_f":
            gold = {(e.start_char, e.end_char, e.label_) for e in eg.reference.ents}
            found = {(e.start_char, e.end_char, e.label_) for e in eg.predicted.ents}
            counts.append([len(gold & found), len(found - gold), len(gold - found)])
        else:
            aligned, attr = TOKEN_SCORES[score]
            gold_values = eg.get_aligned(aligned, as_string=True)
            pairs = [(g, getattr(t, attr)) for g, t in zip(gold_values, eg.predicted) if g]
            counts.append([sum(g == p for g, p in pairs), len(pairs)])
    return {"score": score, "counts": counts}


def run_seconds(output: Path, wall: float, cpu: float) -> Dict[str, Any]:
    """Wall and CPU seconds of the run: this process's child, or, for a
    resumable run, the training loop's own count over every segment (the
    checkpoint's; time after a killed segment's last checkpoint is not in it)."""
    state = output / "checkpoint" / "state.json"
    if state.exists():
        loop = json.loads(state.read_text())
        return {
            "wall_seconds": round(loop["seconds"], 1),
            "cpu_seconds": round(loop["cpu_seconds"], 1),
            "segments": loop["segments"],
        }
    return {"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--dev-select", type=Path, required=True)
    parser.add_argument("--dev-score", type=Path, required=True)
    parser.add_argument("--encoder", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the CPU's cores)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="train and score on this GPU (-1: the CPU)")
    parser.add_argument("--protocol", type=json.loads, default={}, help="JSON overrides of PROTOCOL (smoke tests only)")
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="checkpoint at every evaluation (OUTPUT/checkpoint); the same command again resumes the run",
    )
    parser.add_argument(
        "--rescore", action="store_true", help="no training: score OUTPUT's model-best on DEV_SCORE again"
    )
    args = parser.parse_args(argv)
    if args.rescore:
        record = json.loads((args.output / "run.json").read_text())
        record["score"] = score_on(args.output / "model-best", args.dev_score, args.gpu_id)
        record.setdefault("environment", environment())
        (args.output / "run.json").write_text(json.dumps(record, indent=2) + "\n")
        return 0
    p = {**PROTOCOL, **args.protocol}
    args.output.mkdir(parents=True, exist_ok=True)
    log = args.output / "log.jsonl"
    resuming = args.resumable and (args.output / "checkpoint" / "state.json").exists()
    if resuming:
        keep_log_segment(log)
    else:
        for old in [log, *args.output.glob("log.*.jsonl")]:
            old.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "scripts.train",
        str(args.config),
        "--output",
        str(args.output),
        "--max-steps",
        str(p["max_steps"]),
        "--gpu-id",
        str(args.gpu_id),
        "--paths.train",
        str(args.train),
        "--paths.dev",
        str(args.dev_select),
        "--paths.transformer",
        args.encoder,
        "--system.seed",
        str(args.seed),
        "--training.patience",
        str(p["patience"]),
        "--training.eval_frequency",
        str(p["eval_frequency"]),
        "--training.optimizer.learn_rate.initial_rate",
        str(p["learn_rate"]),
        "--training.optimizer.learn_rate.warmup_steps",
        str(p["warmup_steps"]),
        "--training.logger.@loggers",
        "spacy.ConsoleLogger.v3",
        "--training.logger.progress_bar",
        "null",
        "--training.logger.output_file",
        str(log),
        *(["--resumable"] if args.resumable else []),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    returncode = subprocess.call(command, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if returncode != 0:
        print(f"training failed ({returncode}): nothing recorded", file=sys.stderr)
        return returncode
    evaluations = read_evaluations(args.output, log)
    best = max(evaluations, key=lambda e: e["score"])
    last_step = evaluations[-1]["step"]
    stop = stopped_by(last_step, best["step"], patience=p["patience"], max_steps=p["max_steps"])
    record = {
        "config": str(args.config),
        "train": str(args.train),
        "dev_select": str(args.dev_select),
        "dev_score": str(args.dev_score),
        "encoder": Path(args.encoder).name,
        "seed": args.seed,
        "protocol": p,
        "steps": last_step,
        "best_step": best["step"],
        "best_select_score": best["score"],
        "stopped_by": stop,
        "converged": stop == "patience",
        "score": score_on(args.output / "model-best", args.dev_score, args.gpu_id),
        "evaluations": evaluations,
        **run_seconds(args.output, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)),
        "threads": args.threads,
        "gpu_id": args.gpu_id,
        "environment": environment(),
    }
    (args.output / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: record[k] for k in ("steps", "best_step", "stopped_by", "best_select_score")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
