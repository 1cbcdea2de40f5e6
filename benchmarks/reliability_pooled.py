"""The reliability diagram of entity posteriors measured by benchmarks.entity_probabilities, before and after calibration.

    python -m benchmarks.reliability_pooled metrics/calibration/folds_ner_cpu_uncalibrated.json \
        metrics/calibration/folds_ner_cpu_tokens.json --plot metrics/calibration/reliability_folds_ner_cpu_tokens.png

BEFORE and AFTER are two `--json` outputs of benchmarks.entity_probabilities
(pooled with --and or not), e.g. the fold models at tau = 1 and calibrated:
their entity bins are drawn as benchmarks.reliability draws its own, one panel,
the temperatures of every pooled pipeline in the legend. Both must have
measured the same docs.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from .reliability import MATPLOTLIB_MISSING, plot


def panel(record: Dict[str, Any]) -> Dict[str, Any]:
    """One side of the panel: the record's entity curve, its temperatures as one label."""
    pairs = record.get("pairs") or [record]
    taus = [pair.get("temperature") for pair in pairs]
    label = ", ".join("-" if tau is None else f"{tau:.3g}" for tau in taus)
    return {**record["entities"], "temperature": label}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="benchmarks.entity_probabilities --json, before calibration")
    parser.add_argument("after", type=Path, help="the same, after")
    parser.add_argument("--plot", type=Path, required=True, help="the image to write (.png, .svg, .pdf)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(MATPLOTLIB_MISSING, file=sys.stderr)
        return 1
    before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    if before.get("dev") != after.get("dev"):
        parser.error(
            f"BEFORE measured {before.get('dev')}, AFTER {after.get('dev')}: give two records of the same docs"
        )
    result = {"entities": {"before": panel(before), "after": panel(after)}}
    plot(result, args.plot, args.title or f"{args.after.stem}, pooled")
    print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
