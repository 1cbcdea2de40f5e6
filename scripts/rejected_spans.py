"""Does learning from rejected spans pay? An experiment on an entity corpus.

    python -m scripts.rejected_spans corpus/uner-train.spacy corpus/uner-dev.spacy \\
        [--config configs/ner.cfg] [--annotated 0.2] [--weak-steps 1000] [--steps 2000] \\
        [--workdir training/rejected_spans] [--output metrics/ner/rejected_spans.json]

The setting: an annotator has labelled a share (`--annotated`) of the training
docs fully. A weak model trained on them proposes entities on the rest; the
annotator rejects the wrong ones (the proposals that are not gold entities) and
does nothing else. Then two models train on all the docs, the same config,
steps and seed:

- `without`: the rest of the docs carry no annotation (every label unknown:
  they add nothing to the loss), i.e. only the annotated share counts;
- `with`: the rest carry their rejected spans in doc.spans["incorrect_spans"]
  and crf_tagger's `incorrect_spans_key = "incorrect_spans"` leaves every path
  containing one out of the gold sum.

Both are scored on the dev corpus (`spacy evaluate`, ents_f/p/r). The JSON
holds the setup (docs, the weak model's dev F1, rejected spans) and both scores.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import spacy
from spacy.tokens import Doc, DocBin, Span

from .common import print_and_write

KEY = "incorrect_spans"


def train(config: str, train_path: Path, dev: str, output: Path, steps: int, overrides: List[str]) -> None:
    """Run `spacy train` for `steps` steps (the config's learning rate schedule)."""
    command = [
        sys.executable, "-m", "spacy", "train", config, "--output", str(output),
        "--paths.train", str(train_path), "--paths.dev", dev,
        "--training.max_steps", str(steps), *overrides,
    ]
    subprocess.run(command, check=True)


def evaluate(model: Path, dev: str) -> Dict[str, float]:
    """ents_f, ents_p and ents_r of a pipeline on the dev corpus."""
    out = model.parent / "dev_scores.json"
    subprocess.run([sys.executable, "-m", "spacy", "evaluate", str(model), dev, "--output", str(out)], check=True)
    scores = json.loads(out.read_text())
    return {key: round(100 * scores[key], 2) for key in ("ents_f", "ents_p", "ents_r")}


def bare(doc: Doc) -> Doc:
    """The doc's words, without any annotation (every entity label unknown)."""
    return Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])


def rejections(nlp, docs: List[Doc]) -> List[Doc]:
    """Bare copies of the docs with the weak model's wrong entities as rejected spans."""
    rejected_docs = []
    for gold, predicted in zip(docs, nlp.pipe(bare(doc) for doc in docs)):
        gold_spans = {(e.start, e.end, e.label_) for e in gold.ents}
        doc = bare(gold)
        wrong = [e for e in predicted.ents if (e.start, e.end, e.label_) not in gold_spans]
        doc.spans[KEY] = [Span(doc, e.start, e.end, label=e.label_) for e in wrong]
        rejected_docs.append(doc)
    return rejected_docs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--config", default="configs/ner.cfg")
    parser.add_argument("--annotated", type=float, default=0.2, help="share of the train docs annotated fully")
    parser.add_argument("--weak-steps", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--workdir", type=Path, default=Path("training/rejected_spans"))
    parser.add_argument("--output", type=Path, default=Path("metrics/ner/rejected_spans.json"))
    args = parser.parse_args(argv)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(args.train).get_docs(nlp.vocab))
    n_annotated = max(1, int(len(docs) * args.annotated))
    annotated, rest = docs[:n_annotated], docs[n_annotated:]
    args.workdir.mkdir(parents=True, exist_ok=True)
    annotated_path = args.workdir / "annotated.spacy"
    DocBin(docs=annotated, store_user_data=True).to_disk(annotated_path)
    weak_dir = args.workdir / "weak"
    train(args.config, annotated_path, args.dev, weak_dir, args.weak_steps, [])
    weak = spacy.load(weak_dir / "model-best")
    weak_scores = evaluate(weak_dir / "model-best", args.dev)
    rejected = rejections(weak, rest)
    plain_path, rejected_path = args.workdir / "without.spacy", args.workdir / "with.spacy"
    DocBin(docs=annotated + [bare(doc) for doc in rest]).to_disk(plain_path)
    DocBin(docs=annotated + rejected, store_user_data=True).to_disk(rejected_path)
    results = {}
    for name, path, extra in [
        ("without", plain_path, []),
        ("with", rejected_path, ["--components.crf_tagger.incorrect_spans_key", KEY]),
    ]:
        output = args.workdir / name
        train(args.config, path, args.dev, output, args.steps, extra)
        results[name] = evaluate(output / "model-best", args.dev)
    record = {
        "config": args.config,
        "train_docs": len(docs),
        "annotated_docs": len(annotated),
        "rejection_docs": len(rest),
        "rejected_spans": sum(len(doc.spans[KEY]) for doc in rejected),
        "gold_entities_in_rejection_docs": sum(len(doc.ents) for doc in rest),
        "weak_steps": args.weak_steps,
        "weak_model": weak_scores,
        "steps": args.steps,
        "without": results["without"],
        "with": results["with"],
        "ents_f_gain": round(results["with"]["ents_f"] - results["without"]["ents_f"], 2),
    }
    print_and_write(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
