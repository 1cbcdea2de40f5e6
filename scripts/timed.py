"""Run a command and write its wall time as JSON: timed.py OUT.json -- CMD ...

A command that starts with `python` runs with the interpreter that runs this
script, as spaCy's project runner does for the outer command: a venv's python
works without activating the venv."""
import json
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list) -> int:
    out, separator, command = argv[0], argv[1], argv[2:]
    if separator != "--" or not command:
        print("usage: timed.py OUT.json -- COMMAND ...", file=sys.stderr)
        return 2
    if command[0] in ("python", "python3"):
        command = [sys.executable, *command[1:]]
    start = time.perf_counter()
    returncode = subprocess.call(command)
    seconds = time.perf_counter() - start
    if returncode == 0:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps({"train_seconds": round(seconds, 1), "command": command}, indent=2))
        print(f"Wall time: {seconds:.1f} s -> {out}")
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
