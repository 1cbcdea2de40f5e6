"""A CRF pipeline against spaCy's on the same encoder: dev scores, paired significance, speed, train time.

    python -m benchmarks.transformer_compare tagger training/trf/trf_tagger/model-last \\
        training/trf/trf_tagger_spacy/model-last corpus/en_ewt-ud-dev.spacy --output metrics/trf/tagger.json
    python -m benchmarks.transformer_compare ner CRF SPACY corpus/uner-dev.spacy --and beam=BEAM_MODEL ...

TASK is what both pipelines write:
  tagger  token.tag_: accuracy and McNemar's test (benchmarks.paired_test);
  morph   token.pos_ and token.morph: accuracy of each, McNemar's test of each;
  ner     doc.ents: P, R, F and a paired bootstrap of F1 over the dev docs
          (benchmarks.paired_bootstrap) against each spaCy pipeline.
Both read the dev set's own tokens (gold tokenisation): the tagger and the
morphologizer a sentence per doc, as `spacy evaluate --gold-preproc` and their
training; the entity recognizers the corpus' docs, as their training.

Speed: nlp.pipe words/s of every pipeline on the first --speed-words words of
those docs, in turn, one pass per pipeline and round after one warm-up round,
the median of --repeats rounds, with --threads torch threads; the ratio to
spaCy's first pipeline. Train time: the train_time.json (benchmarks.timed) beside
each pipeline's folder, when there is one.
"""

import argparse
import json
import statistics
from pathlib import Path
from typing import Dict, List, Optional

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from benchmarks.paired_bootstrap import (
    entity_counts,
    paired_bootstrap,
    precision_recall_f1,
)
from benchmarks.paired_test import compare

from .common import bare, gold_sentences, pipe_rates_in_turn, write_json

TASKS = {"tagger": ["tag_"], "morph": ["pos_", "morph"], "ner": []}


def dev_docs(nlp: Language, path: str, task: str) -> List[Doc]:
    """The gold docs: a sentence per doc for tags, the corpus' docs for entities."""
    if task == "ner":
        return list(DocBin().from_disk(path).get_docs(nlp.vocab))
    return gold_sentences(path, nlp.vocab)


def predict(nlp: Language, gold: List[Doc], batch_size: int = 64) -> List[Doc]:
    """The pipeline's annotations of the gold docs' words and spaces."""
    return list(nlp.pipe((bare(doc) for doc in gold), batch_size=batch_size))


def train_time(model: str) -> Optional[Dict]:
    """The benchmarks.timed record of the training that wrote model, if any."""
    path = Path(model).parent / "train_time.json"
    return json.loads(path.read_text()) if path.exists() else None


def training_settings(nlp: Language) -> Dict:
    """What the pipeline was trained with: the encoder, budget, batches, schedule and seed."""
    config = nlp.config.interpolate()
    training = config["training"]
    learn_rate = training["optimizer"].get("learn_rate")
    transformer = config["components"].get("transformer", {}).get("model", {})
    return {
        "encoder": Path(str(transformer.get("name", "-"))).name,
        "max_steps": training["max_steps"],
        "batcher": {k: v for k, v in training["batcher"].items() if k in ("@batchers", "size")},
        "learn_rate": {k: v for k, v in learn_rate.items() if k != "@schedules"}
        if isinstance(learn_rate, dict)
        else learn_rate,
        "seed": training["seed"],
    }


def first_words(docs: List[Doc], n_words: int) -> List[Doc]:
    """The first docs that hold n_words words (at least one doc)."""
    chosen, total = [], 0
    for doc in docs:
        if chosen and total >= n_words:
            break
        chosen.append(doc)
        total += len(doc)
    return chosen


def scores(task: str, gold: List[Doc], predicted: List[Doc]) -> Dict[str, float]:
    if task == "ner":
        return {f"ents_{k}": round(v, 2) for k, v in precision_recall_f1(entity_counts(gold, predicted)).items()}
    return {f"{attr.rstrip('_')}_acc": compare(gold, predicted, predicted, attr)["acc_a"] for attr in TASKS[task]}


def run(
    task: str, pipelines: Dict[str, str], dev: str, *, speed_words: int, repeats: int, threads: int, samples: int
) -> Dict:
    """Everything the comparison reports; pipelines maps a name to a model ("crf" first, then spaCy's)."""
    torch.set_num_threads(threads)
    nlps = {name: spacy.load(model) for name, model in pipelines.items()}
    gold = dev_docs(next(iter(nlps.values())), dev, task)
    predicted = {name: predict(nlp, gold) for name, nlp in nlps.items()}
    names = list(pipelines)
    crf, peers = names[0], names[1:]
    result: Dict = {
        "task": task,
        "dev": dev,
        "docs": len(gold),
        "words": sum(len(d) for d in gold),
        "threads": threads,
        "systems": {},
    }
    for name in names:
        result["systems"][name] = {
            "model": pipelines[name],
            "component": nlps[name].pipe_names[-1],
            **scores(task, gold, predicted[name]),
            "train_time": train_time(pipelines[name]),
            "training": training_settings(nlps[name]),
        }
    result["paired"] = {}
    for peer in peers:
        if task == "ner":
            result["paired"][peer] = paired_bootstrap(
                entity_counts(gold, predicted[crf]), entity_counts(gold, predicted[peer]), samples=samples
            )
        else:
            result["paired"][peer] = {
                attr: compare(gold, predicted[crf], predicted[peer], attr) for attr in TASKS[task]
            }
    timed = first_words(gold, speed_words)
    rates = pipe_rates_in_turn(nlps, [bare(doc) for doc in timed], repeats)
    for name in names:
        result["systems"][name]["words_per_second"] = round(statistics.median(rates[name]))
        result["systems"][name]["words_per_second_runs"] = [round(r) for r in rates[name]]
    result["speed_words"] = sum(len(d) for d in timed)
    result["speed_ratio"] = round(
        result["systems"][crf]["words_per_second"] / result["systems"][peers[0]]["words_per_second"], 3
    )
    return result


def summary(result: Dict) -> List[str]:
    lines = []
    for name, system in result["systems"].items():
        values = {k: v for k, v in system.items() if k.endswith(("_acc", "_p", "_r", "_f"))}
        seconds = (system["train_time"] or {}).get("train_seconds")
        lines.append(f"{name}: {values} words/s {system['words_per_second']} train {seconds} s")
    for peer, paired in result["paired"].items():
        lines.append(f"crf vs {peer}: {paired}")
    lines.append(f"speed ratio crf/{list(result['systems'])[1]}: {result['speed_ratio']}")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("crf", help="the CRF pipeline")
    parser.add_argument("spacy", help="spaCy's pipeline on the same encoder")
    parser.add_argument("dev", help="the annotated dev set (.spacy)")
    parser.add_argument(
        "--and",
        dest="more",
        action="append",
        default=[],
        metavar="NAME=MODEL",
        help="another spaCy pipeline to compare (e.g. beam=training/trf/trf_ner_beam/model-last)",
    )
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--speed-words", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--samples", type=int, default=10000, help="bootstrap draws (ner)")
    args = parser.parse_args(argv)
    pipelines = {"crf": args.crf, "spacy": args.spacy}
    for item in args.more:
        name, sep, model = item.partition("=")
        if not sep or not name or name in pipelines:
            parser.error(f"--and takes NAME=MODEL with a new NAME, got {item!r}")
        pipelines[name] = model
    result = run(
        args.task,
        pipelines,
        args.dev,
        speed_words=args.speed_words,
        repeats=args.repeats,
        threads=args.threads,
        samples=args.samples,
    )
    write_json(result, args.output)
    print("\n".join(summary(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
