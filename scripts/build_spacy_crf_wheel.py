"""Build the spacy-crf wheel into a folder, beside the pipeline's wheel, so that
a machine without spacy-crf (a Ray worker node, a fresh venv) can install both.

    python -m scripts.build_spacy_crf_wheel packages

The source is the spacy-crf that Python imports here (this repository, or an
editable install of it).
"""

import subprocess
import sys
from pathlib import Path

import spacy_crf


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    root = Path(spacy_crf.__file__).resolve().parent.parent
    if not (root / "pyproject.toml").exists():
        sys.exit(
            f"spacy-crf is imported from {root}, which is not its source tree (no pyproject.toml): "
            "install it with `pip install -e .` from a clone, or copy its wheel into the folder by hand."
        )
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--wheel-dir", str(out), str(root)], check=True
    )
    wheels = sorted(path.name for path in out.glob("spacy_crf-*.whl"))
    print(f"spacy-crf wheel in {out}: {', '.join(wheels)}")


if __name__ == "__main__":
    main()
