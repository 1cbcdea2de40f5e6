"""Split a .spacy corpus into two halves by docs, e.g. a dev set into one half
to calibrate on and one to measure on.

    python -m scripts.split_corpus corpus/en_ewt-ud-dev.spacy corpus/dev-a.spacy corpus/dev-b.spacy [--interleave]

By default the first half of the docs and the rest; with --interleave the docs
alternate between the halves (even docs, odd docs), so that both halves hold
every part of a corpus ordered by genre or source, as UD treebanks are.
"""
import argparse
import sys

import spacy
from spacy.tokens import DocBin


def split(docs: list, interleave: bool = False) -> tuple:
    """(first, second) halves of the docs: the first half and the rest, or
    with `interleave` the even and the odd docs."""
    if interleave:
        return docs[0::2], docs[1::2]
    half = len(docs) // 2
    return docs[:half], docs[half:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--interleave", action="store_true", help="even docs to the first half, odd docs to the second")
    args = parser.parse_args(argv)
    docs = list(DocBin().from_disk(args.corpus).get_docs(spacy.blank("xx").vocab))
    first, second = split(docs, args.interleave)
    DocBin(docs=first, store_user_data=True).to_disk(args.first)
    DocBin(docs=second, store_user_data=True).to_disk(args.second)
    print(f"{len(docs)} docs -> {len(first)} in {args.first}, {len(second)} in {args.second}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
