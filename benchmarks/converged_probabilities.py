"""Entity probabilities of a converged run's chosen pipeline, cross-fitted on the run's two dev halves.

    python -m benchmarks.converged_probabilities training/converged/NAME --objective entities \\
        --json benchmarks/runs/converged/probabilities/NAME_entities.json \\
        --plot docs/images/pr_converged_NAME_entities.png

The run (`python -m benchmarks.converged`) chose its model-best on one half of
the dev docs (run.json's dev_select) and scored it on the other (dev_score).
Its entity probabilities are measured on both halves, pooled, each by a
pipeline whose temperature never saw that half:

- crf_ner: model-best calibrated on dev_select (`spacy_crf calibrate
  --objective OBJECTIVE`) measures dev_score, and calibrated on dev_score
  measures dev_select. `--objective none` measures model-best as trained
  (its own temperature) on both halves.
- spaCy's beam_ner: model-best's beam scores on both halves (it has no
  temperature; --objective is ignored).

The figures are benchmarks.entity_probabilities' (`--and` pools the two
halves); the docs are read as the run's config reads its dev corpus. The
calibrated copies are saved in the run's folder (calibrated_OBJECTIVE_select
and _score). The JSON adds "run" (the run's folder name) and "objective".
"""

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from spacy_crf.calibrate import OBJECTIVES as CALIBRATE_OBJECTIVES

# spacy_crf calibrate's objectives, and "none": the pipeline as trained
OBJECTIVES = (*CALIBRATE_OBJECTIVES, "none")


def halves(run_dir: Path) -> List[str]:
    """The run's dev halves, [dev_select, dev_score], from its run.json."""
    record = json.loads((run_dir / "run.json").read_text(encoding="utf8"))
    return [record["dev_select"], record["dev_score"]]


def measured_pairs(run_dir: Path, objective: str, system: str, gold_preproc: bool) -> List[List[str]]:
    """The (pipeline, docs) pairs that measure every dev doc: the dev_score
    half first, then dev_select; for a crf_ner with an objective, each half
    by the copy calibrated on the other."""
    from spacy_crf.calibrate import calibrate

    select, score = halves(run_dir)
    model = run_dir / "model-best"
    if system != "crf_ner" or objective == "none":
        return [[str(model), score], [str(model), select]]
    pairs = []
    for fit_on, fit_name, measured in ((select, "select", score), (score, "score", select)):
        output = run_dir / f"calibrated_{objective}_{fit_name}"
        calibrate(model, fit_on, output=output, gold_preproc=gold_preproc, objective=objective)
        pairs.append([str(output), measured])
    return pairs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a converged run's folder: run.json and model-best")
    parser.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="tokens",
        help="what crf_ner's temperature is fitted to (spacy_crf calibrate --objective), or none",
    )
    parser.add_argument("--json", type=Path, required=True, help="write the figures here")
    parser.add_argument("--plot", default=None, help="draw precision and recall against t here")
    args = parser.parse_args(argv)

    import spacy

    import spacy_crf  # noqa: F401  (registers crf_ner)

    from . import entity_probabilities

    nlp = spacy.load(args.run / "model-best")
    _, system = entity_probabilities.entity_component(nlp)
    gold_preproc = bool(nlp.config.get("corpora", {}).get("dev", {}).get("gold_preproc", False))
    del nlp
    (first_model, first_dev), (second_model, second_dev) = measured_pairs(
        args.run, args.objective, system, gold_preproc
    )
    given = [first_model, first_dev, "--and", second_model, second_dev, "--json", str(args.json)]
    given += ["--gold-preproc" if gold_preproc else "--no-gold-preproc"]
    if args.plot:
        given += ["--plot", args.plot]
    code = entity_probabilities.main(given)
    if code == 0:
        result = json.loads(args.json.read_text(encoding="utf8"))
        result["run"] = args.run.name
        result["objective"] = args.objective if system == "crf_ner" else None
        args.json.write_text(json.dumps(result, indent=2), encoding="utf8")
    return code


if __name__ == "__main__":
    sys.exit(main())
