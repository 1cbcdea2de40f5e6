"""The share of dev words whose gold UPOS+FEATS bundle never occurs in train.

    python -m benchmarks.unseen_bundles TREEBANK_DIR TRAIN_NAME DEV_NAME [--output OUT.json]

Reads TREEBANK_DIR/TRAIN_NAME.conllu and TREEBANK_DIR/DEV_NAME.conllu directly
and counts syntactic words, as the project trains and evaluates on them: the
lines of multiword tokens ("1-2 don't") and empty nodes ("8.1") are skipped.
A bundle is the UPOS and the set of features (their order does not matter).
crf_morphologizer and spaCy's morphologizer both predict whole
bundles seen in training, so a dev word with an unseen bundle is an error for
both: 100 minus the rate bounds their pos_morph_acc. Prints the JSON it writes.
"""

import argparse
import collections
import json
from pathlib import Path
from typing import Counter, Dict, FrozenSet, Iterator, Optional, Tuple

Bundle = Tuple[str, FrozenSet[str]]


def read_bundles(path: Path) -> Iterator[Bundle]:
    """The (UPOS, features) bundle of each syntactic word of a CoNLL-U file.

    path (Path): a CoNLL-U file.
    RETURNS (Iterator[Bundle]): one bundle per word, in order; "_" (unset)
        FEATS is the empty set.
    """
    with path.open(encoding="utf8") as file_:
        for line in file_:
            if not line.strip() or line.startswith("#"):
                continue
            columns = line.rstrip("\n").split("\t")
            if not columns[0].isdigit():  # "1-2" multiword token, "8.1" empty node
                continue
            upos, feats = columns[3], columns[5]
            yield upos, frozenset() if feats == "_" else frozenset(feats.split("|"))


def unseen_bundle_rate(train_path: Path, dev_path: Path) -> Dict[str, object]:
    """How many dev words have a bundle that no train word has.

    train_path (Path): the train CoNLL-U file.
    dev_path (Path): the dev CoNLL-U file.
    RETURNS (Dict[str, object]): train_words, train_bundles (distinct),
        dev_words, dev_bundles, unseen_words, unseen_bundles (distinct dev
        bundles not in train) and unseen_rate (percent of dev words).
    """
    train: Counter[Bundle] = collections.Counter(read_bundles(train_path))
    dev: Counter[Bundle] = collections.Counter(read_bundles(dev_path))
    unseen = {bundle: count for bundle, count in dev.items() if bundle not in train}
    dev_words = sum(dev.values())
    return {
        "train": str(train_path),
        "dev": str(dev_path),
        "train_words": sum(train.values()),
        "train_bundles": len(train),
        "dev_words": dev_words,
        "dev_bundles": len(dev),
        "unseen_words": sum(unseen.values()),
        "unseen_bundles": len(unseen),
        "unseen_rate": round(100 * sum(unseen.values()) / dev_words, 2) if dev_words else 0.0,
    }


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("treebank_dir", type=Path)
    parser.add_argument("train_name")
    parser.add_argument("dev_name")
    parser.add_argument("--output", type=Path, help="write the JSON here too")
    args = parser.parse_args(argv)
    result = unseen_bundle_rate(
        args.treebank_dir / f"{args.train_name}.conllu", args.treebank_dir / f"{args.dev_name}.conllu"
    )
    text = json.dumps(result, indent=2)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
