"""Split a .spacy corpus by docs: into two halves (e.g. a dev set into one half
to calibrate on and one to measure on), or into K folds for cross-fitting.

    python -m scripts.split_corpus corpus/en_ewt-ud-dev.spacy corpus/dev-a.spacy corpus/dev-b.spacy [--interleave]
    python -m scripts.split_corpus corpus/uner-train.spacy --folds 3 --block 40 --output-dir corpus/uner-train-folds

By default the first half of the docs and the rest; with --interleave the docs
alternate between the halves (even docs, odd docs), so that both halves hold
every part of a corpus ordered by genre or source, as UD treebanks are.

With --folds K, the docs go to the folds in blocks of --block consecutive
docs, round robin: doc i to fold (i // block) mod K. The output folder gets
fold-k.spacy (the held-out docs of fold k) and rest-k.spacy (every other doc,
to train on), for k = 0 .. K-1. Blocks keep the chunks of one source document
(the corpus' docs of 10 sentences cut a treebank's documents) in one fold, so
that a held-out fold does not share its documents' names with the training
folds; round robin gives every fold every genre. (UNER English EWT, docs of
10 sentences: with --block 1, 65% of fold 0's entity strings occur in the
other folds, against 40% of the dev set's in train; with --block 40, 40 to
53%.)
"""
import argparse
import sys
from pathlib import Path
from typing import List, Tuple

import spacy
from spacy.tokens import DocBin


def split(docs: list, interleave: bool = False) -> tuple:
    """(first, second) halves of the docs: the first half and the rest, or
    with `interleave` the even and the odd docs."""
    if interleave:
        return docs[0::2], docs[1::2]
    half = len(docs) // 2
    return docs[:half], docs[half:]


def folds(docs: list, n_folds: int, block: int = 1) -> List[Tuple[list, list]]:
    """(held_out, rest) for each of n_folds folds: doc i is held out in fold
    (i // block) mod n_folds and in the rest of every other fold."""
    if n_folds < 2 or block < 1:
        raise ValueError(f"need at least 2 folds and blocks of at least 1 doc, got {n_folds} and {block}")
    fold_of = [(i // block) % n_folds for i in range(len(docs))]
    return [
        ([doc for doc, f in zip(docs, fold_of) if f == k], [doc for doc, f in zip(docs, fold_of) if f != k])
        for k in range(n_folds)
    ]


def _save(docs: list, path) -> None:
    DocBin(docs=docs, store_user_data=True).to_disk(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("first", nargs="?", help="the first half (without --folds)")
    parser.add_argument("second", nargs="?", help="the second half (without --folds)")
    parser.add_argument("--interleave", action="store_true", help="even docs to the first half, odd docs to the second")
    parser.add_argument("--folds", type=int, default=0, help="split into this many interleaved folds instead")
    parser.add_argument("--block", type=int, default=1, help="with --folds: consecutive docs that stay in one fold")
    parser.add_argument("--output-dir", default=None, help="with --folds: where fold-k.spacy and rest-k.spacy go")
    args = parser.parse_args(argv)
    if args.folds and (args.folds < 2 or args.block < 1):
        parser.error(f"--folds must be at least 2 and --block at least 1, got {args.folds} and {args.block}")
    if args.folds and (args.output_dir is None or args.first or args.second):
        parser.error("--folds takes --output-dir and no FIRST or SECOND")
    if not args.folds and (args.first is None or args.second is None):
        parser.error("give FIRST and SECOND, or --folds K --output-dir DIR")
    docs = list(DocBin().from_disk(args.corpus).get_docs(spacy.blank("xx").vocab))
    if args.folds:
        if len(docs) < args.folds * args.block:
            parser.error(f"{len(docs)} docs cannot make {args.folds} folds of blocks of {args.block}")
        output = Path(args.output_dir)
        output.mkdir(parents=True, exist_ok=True)
        for k, (held_out, rest) in enumerate(folds(docs, args.folds, args.block)):
            _save(held_out, output / f"fold-{k}.spacy")
            _save(rest, output / f"rest-{k}.spacy")
            print(f"fold {k}: {len(held_out)} docs held out, {len(rest)} to train on -> {output}")
        return 0
    first, second = split(docs, args.interleave)
    _save(first, args.first)
    _save(second, args.second)
    print(f"{len(docs)} docs -> {len(first)} in {args.first}, {len(second)} in {args.second}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
