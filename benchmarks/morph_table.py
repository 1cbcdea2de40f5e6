"""Results tables of the `morph` workflow, one per treebank; and the scoring of
one model's whole UPOS+FEATS bundles that they read.

    python -m benchmarks.morph_table metrics
    python -m benchmarks.morph_table score MODEL DEV.spacy --output OUT.json

The first form reads metrics/morph/<treebank>/ for every treebank the workflow
ran on (`vars.treebank_name`): <config>.json (spacy evaluate --gold-preproc),
<config>-bundles.json (the second form), <config>-speed.json
(benchmarks.pipeline_speed), <config>-raw.json (benchmarks.raw_text: whole docs of
gold words, and raw text, each read as the pipeline reads them: by sentence
where crf_morphologizer's `by_sentence` is on), paired_<attr>.json (benchmarks.paired_test),
unseen_bundles.json (benchmarks.unseen_bundles) and
training/morph/<treebank>/<config>/train_time.json (benchmarks.timed). It writes
metrics/morph/<treebank>/table.md and prints every table.

The second form tags DEV's sentences on their own words, one sentence per doc as
`spacy evaluate --gold-preproc` does, and scores pos_acc, morph_acc and
pos_morph_acc (a word is right when its UPOS and its whole feature set are)
with crf_morphologizer's scores (spacy_crf.scoring.morph_scores), whatever
component wrote them: the same definition for crf_morphologizer and spaCy's
morphologizer, whose own scorer has no whole-bundle accuracy.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Config

from spacy_crf.scoring import morph_scores

from .common import gold_sentences

# the workflow's configs first, in this order; any other config after them
CONFIG_ORDER = ["cpu_morph", "cpu_morph_full", "cpu_morph_linear", "cpu_morph_docs", "cpu_morph_char", "baseline_pos"]
# runs of a config with settings changed on the command line (morph-ablation, morph-emissions)
VARIANTS = {
    "cpu_morph_full": '`configs/cpu_morph.cfg`, transitions = "full"',
    "cpu_morph_linear": '`configs/cpu_morph.cfg`, emissions = "full"',
    "cpu_morph_docs": "`configs/cpu_morph.cfg`, trained on whole docs (corpora.train.gold_preproc = false)",
}
# McNemar files of the paired-morph command, in the table's order
PAIRED = {"pos": "UPOS", "morph": "FEATS", "pos+morph": "UPOS+FEATS"}
# a pipeline trained with a 0.x config has a crf_tagger with target "pos+morph"
SYSTEMS = {"crf_morphologizer": "crf_morphologizer", "crf_tagger": "crf_tagger", "morphologizer": "spaCy morphologizer"}
SUFFIXES = ("-bundles", "-speed", "-raw")


def score_bundles(model_path: str, dev_path: str) -> Dict[str, float]:
    """pos_acc, morph_acc and pos_morph_acc of a pipeline on a corpus' gold words.

    model_path (str): a pipeline for spacy.load that writes token.pos_ and token.morph.
    dev_path (str): a .spacy corpus with gold UPOS and FEATS.
    RETURNS (Dict[str, float]): the three accuracies (fractions, as spacy
        evaluate writes them), and the number of words.
    """
    nlp = spacy.load(model_path)
    gold = gold_sentences(dev_path, nlp.vocab)
    words = (Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc]) for doc in gold)
    examples = [Example(predicted, reference) for predicted, reference in zip(nlp.pipe(words), gold)]
    scores = morph_scores(examples, target="pos+morph")
    return {
        "pos_acc": scores["pos_acc"],
        "morph_acc": scores["morph_acc"],
        "pos_morph_acc": scores["pos_morph_acc"],
        "words": sum(len(doc) for doc in gold),
    }


def treebank_table(metrics: Path, treebank: str) -> List[str]:
    """The lines of one treebank's Markdown table.

    metrics (Path): the project's metrics/ folder.
    treebank (str): a folder name in metrics/morph/.
    RETURNS (List[str]): a heading, the unseen-bundle rate and the table.
    """
    folder = metrics / "morph" / treebank
    training = metrics.parent / "training" / "morph" / treebank
    lines = [f"### {treebank}", ""]
    unseen = load(folder / "unseen_bundles.json")
    if unseen:
        lines += [
            (
                f"Unseen UPOS+FEATS bundles: {unseen['unseen_rate']:.2f}% of {unseen['dev_words']:,} dev words "
                f"({unseen['unseen_bundles']} of {unseen['dev_bundles']} dev bundles are not among the "
                f"{unseen['train_bundles']} of train)."
            ),
            "",
        ]
    lines += [
        "| system | config | pos_acc | morph_acc | pos_morph_acc | whole docs pos / morph | raw text pos / morph "
        "| train time | words/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for config in configs_in(folder):
        scores = load(folder / f"{config}.json") or {}
        bundles = load(folder / f"{config}-bundles.json") or {}
        speed = (load(folder / f"{config}-speed.json") or {}).get("words_per_second")
        seconds = (load(training / config / "train_time.json") or {}).get("train_seconds")
        raw = load(folder / f"{config}-raw.json") or {}
        docs_cell, raw_cell = (pair(raw.get(kind)) for kind in ("gold_docs", "raw"))
        pos_morph = bundles.get("pos_morph_acc", scores.get("pos_morph_acc"))
        lines.append(
            f"| {system_of(training / config / 'model-best', config)} | {VARIANTS.get(config, f'`configs/{config}.cfg`')} "
            f"| {percent(scores.get('pos_acc', bundles.get('pos_acc')))} "
            f"| {percent(scores.get('morph_acc', bundles.get('morph_acc')))} | {percent(pos_morph)} | {docs_cell} | {raw_cell} "
            f"| {'-' if seconds is None else f'{seconds / 60:.1f} min'} "
            f"| {'-' if speed is None else f'{speed:,}'} |"
        )
    paired = [(name, load(folder / f"paired_{attr}.json")) for attr, name in PAIRED.items()]
    paired = [(name, result) for name, result in paired if result]
    if paired:
        lines += [
            "",
            "McNemar, crf_morphologizer (cpu_morph) against spaCy's morphologizer (baseline_pos), dev words:",
            "",
            "| compared | words | crf_morphologizer | morphologizer | only crf_morphologizer right "
            "| only morphologizer right | chi2 |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, r in paired:
            lines.append(
                f"| {name} | {r['tokens']:,} | {r['acc_a']:.2f} | {r['acc_b']:.2f} | {r['only_a_right']:,} "
                f"| {r['only_b_right']:,} | {r['mcnemar_chi2']:.2f} |"
            )
    return lines


def configs_in(folder: Path) -> List[str]:
    """The configs with a score file in a treebank's folder, the workflow's first."""
    configs = {
        config_of(path.stem)
        for path in folder.glob("*.json")
        if path.stem != "unseen_bundles" and not path.stem.startswith("paired_")
    }
    return [c for c in CONFIG_ORDER if c in configs] + sorted(configs - set(CONFIG_ORDER))


def config_of(stem: str) -> str:
    """The config a metrics file is of: cpu_morph for cpu_morph, cpu_morph-speed and cpu_morph-bundles."""
    for suffix in SUFFIXES:
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def system_of(model_path: Path, config: str) -> str:
    """The trained pipeline's last component (from the config spaCy saved), else config."""
    saved = model_path / "config.cfg"
    if not saved.exists():
        return config
    nlp_config = Config().from_disk(saved, interpolate=False)
    factory = nlp_config["components"][nlp_config["nlp"]["pipeline"][-1]].get("factory", config)
    return SYSTEMS.get(factory, factory)


def load(path: Path) -> Optional[dict]:
    """A JSON file's content, None where there is no file."""
    return json.loads(path.read_text()) if path.exists() else None


def pair(scores: Optional[dict]) -> str:
    """ "pos_acc / morph_acc" of a benchmarks.raw_text record (in percent), "-" for none."""
    if not scores:
        return "-"
    return " / ".join("-" if scores.get(key) is None else f"{scores[key]:.2f}" for key in ("pos_acc", "morph_acc"))


def percent(value: Optional[float]) -> str:
    """A fraction as a percentage with two decimals, "-" for None."""
    return "-" if value is None else f"{100 * value:.2f}"


def write_tables(metrics_dir: str) -> List[str]:
    """Write metrics/morph/<treebank>/table.md for each treebank; return all lines.

    metrics_dir (str): the project's metrics/ folder.
    RETURNS (List[str]): the tables, a blank line between them.
    """
    metrics = Path(metrics_dir)
    lines: List[str] = []
    for folder in sorted(p for p in (metrics / "morph").glob("*") if p.is_dir()):
        table = treebank_table(metrics, folder.name)
        (folder / "table.md").write_text("\n".join(table) + "\n")
        lines += ([""] if lines else []) + table
    return lines


def main(argv: List[str]) -> int:
    if argv and argv[0] == "score":
        parser = argparse.ArgumentParser(
            prog="python -m benchmarks.morph_table score", description=score_bundles.__doc__.splitlines()[0]
        )
        parser.add_argument("model")
        parser.add_argument("dev")
        parser.add_argument("--output", type=Path, required=True)
        args = parser.parse_args(argv[1:])
        result = score_bundles(args.model, args.dev)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        return 0
    lines = write_tables(argv[0] if argv else "metrics")
    if not lines:
        print(
            f"No treebank in {argv[0] if argv else 'metrics'}/morph/: run `spacy project run morph .` first",
            file=sys.stderr,
        )
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
