"""A reliability diagram of a spacy-crf component's probabilities, before and after its stored temperature.

    python -m benchmarks.reliability training/cpu/model-best corpus/en_ewt-ud-dev.spacy \
        --output metrics/calibration/reliability.png [--json metrics/calibration/reliability.json] \
        [--gold-preproc] [--component NAME] [--bins 15]

Reads the annotated docs as `spacy evaluate` does (`--gold-preproc`: on
their gold tokens, one sentence per doc), runs the network once, and plots,
per bin of probability, the share of predictions that were right against
their mean probability: the diagonal is perfect calibration. One panel for
token marginals (the probability of each token's predicted label, against
whether it is the gold label) and, for crf_ner, one for entity
posteriors (each predicted entity's, against whether exactly that span and
label is gold); each with the model's own probabilities (tau = 1) and those
at the temperature stored in the pipeline (`python -m spacy_crf calibrate`
fits it), and the share of predictions in each bin. Prints the ECE and
Brier scores as JSON; `--json` also writes them with every bin. Needs
matplotlib (`pip install matplotlib`).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from spacy_crf.calibration import N_BINS, Outcomes, reliability_bins, sampling_ece
from spacy_crf.calibration.temperature import CalibrationReport

MATPLOTLIB_MISSING = "benchmarks.reliability draws with matplotlib, which is not installed: pip install matplotlib"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="pipeline folder or package")
    parser.add_argument("dev", help="annotated docs: a .spacy file or a folder of them")
    parser.add_argument("--output", required=True, help="the image to write (.png, .svg, .pdf)")
    parser.add_argument("--json", default=None, help="also write the bins and scores as JSON here")
    parser.add_argument(
        "--gold-preproc",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="read the docs on their gold tokens, one sentence per doc",
    )
    parser.add_argument("--component", default=None, help="the spacy-crf component (default: the only one)")
    parser.add_argument("--bins", type=int, default=N_BINS, help="equal-width bins of probability")
    return parser


# the probabilities at which precision is reported: of the predictions at least this probable
PRECISION_AT = (0.5, 0.9)


def curve(outcomes: Outcomes, n_bins: int) -> Dict[str, Any]:
    """The ECE, the ECE of sampling alone (calibration.sampling_ece), Brier
    score, accuracy (share right), bins and, per threshold
    t of PRECISION_AT, the share right of the predictions with probability >= t
    and their count, of some predictions, JSON-able."""
    bins = reliability_bins(outcomes.probs, outcomes.right, n_bins=n_bins)
    precision = {}
    for t in PRECISION_AT:
        kept = outcomes.probs >= t
        precision[str(t)] = {
            "n": int(kept.sum()),
            "precision": float(outcomes.right[kept].mean()) if kept.any() else None,
        }
    floor = sampling_ece(outcomes.probs, n_bins=n_bins) if len(outcomes) else None
    return {
        **outcomes.metrics(n_bins),
        "ece_sampling": floor,
        "n": len(outcomes),
        "bins": bins.to_dict(),
        "precision_at": precision,
    }


def summary(before: CalibrationReport, after: CalibrationReport, n_bins: int) -> Dict[str, Any]:
    """Per kind of prediction ("tokens", and "entities" for crf_ner),
    the curves before and after."""
    kinds = {"tokens": (before.tokens, after.tokens)}
    if before.entities is not None and after.entities is not None:
        kinds["entities"] = (before.entities, after.entities)
    return {
        kind: {
            "before": {"temperature": before.temperature, **curve(a, n_bins)},
            "after": {"temperature": after.temperature, **curve(b, n_bins)},
        }
        for kind, (a, b) in kinds.items()
    }


def plot(result: Dict[str, Any], path: Path, title: str) -> None:
    """Draw one reliability panel per kind of prediction into an image file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(result)
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 5.2), squeeze=False)
    names = {"tokens": "token marginals (predicted label)", "entities": "entity posteriors (predicted spans)"}
    for ax, kind in zip(axes[0], kinds):
        edges = result[kind]["after"]["bins"]["edges"]
        centers = [(lo + hi) / 2 for lo, hi in zip(edges, edges[1:])]
        share = ax.twinx()
        counts = result[kind]["after"]["bins"]["counts"]
        total = max(sum(counts), 1)
        share.bar(centers, [c / total for c in counts], width=edges[1] - edges[0], color="0.85", zorder=0)
        share.set_ylim(0, 1)
        share.set_ylabel("share of predictions (after)", color="0.5")
        ax.set_zorder(share.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.plot([0, 1], [0, 1], linestyle="--", color="0.4", linewidth=1, label="perfect calibration")
        for when, style in (("before", "o-"), ("after", "s-")):
            data = result[kind][when]
            bins = data["bins"]
            points = [(c, a) for c, a in zip(bins["confidence"], bins["accuracy"]) if c is not None]
            ece = "-" if data["ece"] is None else f"{data['ece']:.3f}"
            # one temperature, or a label of several (pooled pipelines)
            tau = data["temperature"]
            tau = "-" if tau is None else tau if isinstance(tau, str) else f"{tau:.3g}"
            ax.plot(
                [c for c, _ in points],
                [a for _, a in points],
                style,
                markersize=4,
                label=f"{when}: tau = {tau}, ECE {ece}",
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("probability")
        ax.set_ylabel("accuracy")
        ax.set_title(f"{names[kind]}, n = {result[kind]['after']['n']:,}")
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(MATPLOTLIB_MISSING, file=sys.stderr)
        return 1
    import spacy
    from spacy.training import Corpus

    from spacy_crf.calibrate import GoldScores, crf_component_name

    nlp = spacy.load(args.model)
    name = crf_component_name(nlp, args.component)
    examples = list(Corpus(args.dev, gold_preproc=args.gold_preproc)(nlp))
    scores = GoldScores(nlp, name, examples)
    stored = nlp.get_pipe(name).temperature
    result = summary(scores.report(1.0), scores.report(stored), args.bins)
    plot(result, Path(args.output), f"{args.model} ({name}) on {Path(args.dev).name}")
    report = {"model": args.model, "component": name, "dev": args.dev, "bins": args.bins, **result}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(
        json.dumps(
            {
                kind: {
                    when: {key: result[kind][when][key] for key in ("temperature", "ece", "brier", "n")}
                    for when in ("before", "after")
                }
                for kind in result
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
