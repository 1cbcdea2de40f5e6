"""Split a .spacy corpus into two halves by docs (the first half, the rest),
e.g. a dev set into one half to calibrate on and one to measure on.

    python -m scripts.split_corpus corpus/en_ewt-ud-dev.spacy corpus/dev-a.spacy corpus/dev-b.spacy
"""
import argparse
import sys

import spacy
from spacy.tokens import DocBin


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args(argv)
    docs = list(DocBin().from_disk(args.corpus).get_docs(spacy.blank("xx").vocab))
    half = len(docs) // 2
    DocBin(docs=docs[:half], store_user_data=True).to_disk(args.first)
    DocBin(docs=docs[half:], store_user_data=True).to_disk(args.second)
    print(f"{len(docs)} docs -> {half} in {args.first}, {len(docs) - half} in {args.second}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
