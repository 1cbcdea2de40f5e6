"""`python -m MODULE ARGS...` in the repository root, whatever the working directory.

    python root.py MODULE [ARGS...]

benchmarks/project.yml runs its commands through this file: spaCy's project
runner starts them in benchmarks/, and the modules (scripts.*, benchmarks.*)
and the paths they are given (configs/, corpus/, training/, metrics/) are the
repository root's.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    return subprocess.call([sys.executable, "-m", *argv], cwd=ROOT, env={**os.environ, "PWD": str(ROOT)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
