"""Split a .spacy corpus by docs: into two halves (e.g. a dev set into one half
to calibrate on and one to measure on), or into K folds for cross-fitting.

    python -m benchmarks.split_corpus corpus/en_ewt-ud-dev.spacy corpus/dev-a.spacy corpus/dev-b.spacy [--interleave]
    python -m benchmarks.split_corpus corpus/uner-train.spacy --folds 3 --block 40 --output-dir corpus/uner-train-folds \
        [--dev corpus/uner-dev.spacy]

By default the first half of the docs and the rest; with --interleave the docs
alternate between the halves (even docs, odd docs), so that both halves hold
every part of a corpus ordered by genre or source, as UD treebanks are.

With --folds K, the docs go to the folds in blocks of --block consecutive
docs, round robin: doc i to fold (i // block) mod K. The output folder gets
fold-k.spacy (the held-out docs of fold k) and rest-k.spacy (every other doc,
to train on), for k = 0 .. K-1. Blocks keep the chunks of a source document
(the corpus' docs of 10 sentences cut a treebank's documents) mostly in one
fold, so that a held-out fold shares fewer of its names with the training
folds; round robin gives every fold every genre. For a corpus with entities
the command prints, per fold, the share of the held-out entities whose text
(lower-cased) is also an entity of the rest, and with --dev DEV.spacy the
same share of the dev set's entities in the whole corpus, to compare.

    python -m benchmarks.split_corpus corpus/uner-train.spacy corpus/uner-train-10.spacy --fraction 0.1 [--seed 0]

With --fraction F, FIRST gets round(F * n) docs drawn at random (a seeded
shuffle; the docs keep their corpus order) and SECOND, if given, the rest. The
same seed draws nested samples: the docs of --fraction 0.1 are among those of
--fraction 0.25, so that a learning curve adds data rather than swapping it.
"""

import argparse
import random
import sys
from pathlib import Path
from typing import List, Optional, Tuple

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


def sample(docs: list, fraction: float, seed: int = 0) -> Tuple[list, list]:
    """(sample, rest): round(fraction * len(docs)) docs drawn by a seeded
    shuffle, and the others, each in corpus order. Samples of one seed are nested."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the fraction must be in (0, 1], got {fraction}")
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    chosen = set(order[: max(1, round(fraction * len(docs)))])
    return [d for i, d in enumerate(docs) if i in chosen], [d for i, d in enumerate(docs) if i not in chosen]


def seen_entities(held_out: list, rest: list) -> Optional[float]:
    """The share of the held-out docs' entities whose lower-cased text is
    also an entity of the rest; None without entities."""
    known = {ent.text.lower() for doc in rest for ent in doc.ents}
    texts = [ent.text.lower() for doc in held_out for ent in doc.ents]
    return sum(text in known for text in texts) / len(texts) if texts else None


def _save(docs: list, path) -> None:
    DocBin(docs=docs, store_user_data=True).to_disk(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("first", nargs="?", help="the first half (without --folds)")
    parser.add_argument("second", nargs="?", help="the second half (without --folds)")
    parser.add_argument("--interleave", action="store_true", help="even docs to the first half, odd docs to the second")
    parser.add_argument("--folds", type=int, default=0, help="split into this many folds instead")
    parser.add_argument(
        "--block", type=int, default=None, help="with --folds: consecutive docs dealt together (default 1)"
    )
    parser.add_argument("--output-dir", default=None, help="with --folds: where fold-k.spacy and rest-k.spacy go")
    parser.add_argument("--dev", default=None, help="with --folds: also print the share of this corpus' entities seen")
    parser.add_argument(
        "--fraction", type=float, default=None, help="FIRST gets this share of the docs, drawn at random"
    )
    parser.add_argument("--seed", type=int, default=0, help="with --fraction: the draw's seed")
    args = parser.parse_args(argv)
    if args.fraction is not None:
        if (
            args.first is None
            or args.folds
            or args.interleave
            or any(x is not None for x in (args.block, args.output_dir, args.dev))
        ):
            parser.error("--fraction takes FIRST [SECOND] and --seed")
        docs = list(DocBin().from_disk(args.corpus).get_docs(spacy.blank("xx").vocab))
        try:
            chosen, rest = sample(docs, args.fraction, args.seed)
        except ValueError as err:
            parser.error(str(err))
        _save(chosen, args.first)
        if args.second is not None:
            _save(rest, args.second)
        print(f"{len(docs)} docs -> {len(chosen)} in {args.first} (fraction {args.fraction}, seed {args.seed})")
        return 0
    if not args.folds:
        if (
            args.first is None
            or args.second is None
            or any(x is not None for x in (args.block, args.output_dir, args.dev))
        ):
            parser.error("give FIRST and SECOND (halves), or --folds K --output-dir DIR [--block N]")
    elif args.first or args.second or args.interleave or args.output_dir is None:
        parser.error("--folds takes --output-dir and --block, not FIRST, SECOND or --interleave")
    vocab = spacy.blank("xx").vocab
    docs = list(DocBin().from_disk(args.corpus).get_docs(vocab))
    if args.folds:
        block = 1 if args.block is None else args.block
        try:
            parts = folds(docs, args.folds, block)
        except ValueError:
            parser.error(f"--folds must be at least 2 and --block at least 1, got {args.folds} and {block}")
        if not all(held_out for held_out, _ in parts):
            parser.error(
                f"{len(docs)} docs leave a fold empty: {args.folds} folds in blocks of {block} "
                f"need more than {(args.folds - 1) * block}"
            )
        output = Path(args.output_dir)
        output.mkdir(parents=True, exist_ok=True)
        for k, (held_out, rest) in enumerate(parts):
            _save(held_out, output / f"fold-{k}.spacy")
            _save(rest, output / f"rest-{k}.spacy")
            seen = seen_entities(held_out, rest)
            note = "" if seen is None else f"; {100 * seen:.1f}% of its entities' texts are entities of the rest"
            print(f"fold {k}: {len(held_out)} docs held out, {len(rest)} to train on{note} -> {output}")
        if args.dev is not None:
            seen = seen_entities(list(DocBin().from_disk(args.dev).get_docs(vocab)), docs)
            if seen is not None:
                print(f"{args.dev}: {100 * seen:.1f}% of its entities' texts are entities of {args.corpus}")
        return 0
    first, second = split(docs, args.interleave)
    _save(first, args.first)
    _save(second, args.second)
    print(f"{len(docs)} docs -> {len(first)} in {args.first}, {len(second)} in {args.second}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
