"""Exit with a clear message if a corpus's files are not there.

    python -m scripts.check_treebank DIR NAME ...

A NAME without a suffix means NAME.conllu. The message names both ways to
get data: the embedded sample (assets/sample/, in every clone) and the full
corpus (`python -m spacy project assets .`, or a copy on disk).
"""

import sys
from pathlib import Path

SAMPLE = Path("assets/sample")


def missing_files(folder: str, names) -> list:
    """The files of `names` (NAME.conllu where NAME has no suffix) that are
    not in `folder`, or are empty."""
    files = [name if Path(name).suffix in (".conllu", ".iob2") else f"{name}.conllu" for name in names]
    return [f for f in files if not (Path(folder) / f).is_file() or (Path(folder) / f).stat().st_size == 0]


def message(folder: str, missing: list) -> str:
    sample = SAMPLE / Path(folder).name
    return (
        f"Corpus files not found: {folder} lacks {', '.join(missing)}.\n"
        f"- The embedded sample: {SAMPLE}/ of a clone of spacy-crf holds the UD English EWT and Universal NER "
        f"samples; the project's defaults point there (restore it with `git checkout -- {SAMPLE}`"
        + (f", or pass --vars.treebank_dir {sample}" if sample.is_dir() and sample != Path(folder) else "")
        + ").\n"
        "- The full corpora: `python -m spacy project assets .` fetches them into assets/ (needs the network), "
        "then `python -m spacy project run all . --vars.treebank_dir assets/UD_English-EWT "
        "--vars.uner_dir assets/UNER_English-EWT --vars.max_steps 0`; or point --vars.treebank_dir "
        "(--vars.uner_dir) at a copy on disk."
    )


def main(folder: str, *names: str) -> int:
    missing = missing_files(folder, names)
    if not missing:
        return 0
    print(message(folder, missing), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
