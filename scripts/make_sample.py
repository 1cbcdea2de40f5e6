"""Write a sample of a CoNLL-U or IOB2 file: every Nth document, whole.

    python -m scripts.make_sample IN OUT --every N

A document starts at a `# newdoc id = ...` comment (UD and Universal NER both
write one); the sample keeps the 1st, (N+1)th, ... documents with all their
sentences and comments, byte for byte, so it converts as the full file does.
This made assets/sample/ from the train and dev files of UD English EWT and
Universal NER English EWT (assets/sample/README.md).
"""

import argparse
import sys
from pathlib import Path
from typing import List


def documents(text: str) -> List[str]:
    """The file's documents, each with its sentences and their blank lines."""
    blocks = text.split("\n\n")
    docs: List[List[str]] = []
    for block in blocks:
        if not block.strip():
            continue
        if block.lstrip("\n").startswith("# newdoc") or not docs:
            docs.append([])
        docs[-1].append(block.strip("\n"))
    return ["\n\n".join(doc) + "\n\n" for doc in docs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--every", type=int, required=True)
    args = parser.parse_args(argv)
    docs = documents(args.input.read_text(encoding="utf8"))
    kept = docs[:: args.every]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(kept), encoding="utf8")
    sentences = sum(doc.count("\n\n") for doc in kept)
    print(f"{args.output}: {len(kept)} of {len(docs)} documents, {sentences} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
