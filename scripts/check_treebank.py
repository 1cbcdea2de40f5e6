"""Exit with a clear message if the treebank's CoNLL-U files are not there.

    python -m scripts.check_treebank TREEBANK_DIR NAME ...
"""
import sys
from pathlib import Path


def main(treebank_dir: str, *names: str) -> int:
    missing = [f"{name}.conllu" for name in names if not (Path(treebank_dir) / f"{name}.conllu").is_file()]
    if not missing:
        return 0
    print(
        f"Treebank not found: {treebank_dir} lacks {', '.join(missing)}.\n"
        "Fetch it with `python -m spacy project assets .`, or point the project at "
        "a local copy: `python -m spacy project run all . --vars.treebank_dir DIR`.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
