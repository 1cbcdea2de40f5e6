"""Run a command and write its wall time and peak memory as JSON.

    python -m benchmarks.timed OUT.json -- CMD ...

A command that starts with `python` runs with the interpreter that runs this
script, as spaCy's project runner does for the outer command: a venv's python
works without activating the venv. "max_rss_mb" is the largest resident set
of the command's processes (null where the OS does not report it)."""

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

try:
    import resource
except ImportError:  # Windows
    resource = None


def children_max_rss_mb() -> Optional[float]:
    """Peak resident memory of the finished child processes, in MiB."""
    if resource is None:
        return None
    kilobytes = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # Linux reports KiB, macOS bytes
    return round(kilobytes / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def main(argv: list) -> int:
    out, separator, command = argv[0], argv[1], argv[2:]
    if separator != "--" or not command:
        print("usage: python -m benchmarks.timed OUT.json -- COMMAND ...", file=sys.stderr)
        return 2
    if command[0] in ("python", "python3"):
        command = [sys.executable, *command[1:]]
    start = time.perf_counter()
    returncode = subprocess.call(command)
    seconds = time.perf_counter() - start
    if returncode == 0:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        record = {"train_seconds": round(seconds, 1), "max_rss_mb": children_max_rss_mb(), "command": command}
        Path(out).write_text(json.dumps(record, indent=2))
        print(f"Wall time: {seconds:.1f} s -> {out}")
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
