"""Convert Universal NER IOB2 files to .spacy, sentences grouped into docs.

    python -m scripts.convert_uner IN.iob2 OUT.spacy [--n-sents 10] [--drop OTH]

Columns: index, token, IOB2 tag, ... Labels in --drop (default OTH, which
early releases had and later ones removed) and the stray "B-O"/"I-O" become O.
"""

import argparse
import sys
from pathlib import Path

import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import biluo_tags_to_spans, iob_to_biluo


def read_sentences(path: Path):
    words, tags = [], []
    for line in path.read_text(encoding="utf8").splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if words:
                yield words, tags
            words, tags = [], []
            continue
        columns = line.split("\t")
        words.append(columns[1])
        tags.append(columns[2])
    if words:
        yield words, tags


def clean(tag: str, drop: set) -> str:
    if tag == "O":
        return tag
    kind = tag.partition("-")[2]
    return "O" if kind in drop or kind == "O" else tag


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--n-sents", type=int, default=10)
    parser.add_argument("--drop", nargs="*", default=["OTH"])
    args = parser.parse_args()
    if not args.input.is_file():
        print(f"UNER file not found: {args.input}. Set --vars.uner_dir.", file=sys.stderr)
        return 1
    vocab = spacy.blank("en").vocab
    drop = set(args.drop)
    sentences = list(read_sentences(args.input))
    docs = []
    for start in range(0, len(sentences), args.n_sents):
        group = sentences[start : start + args.n_sents]
        words = [w for ws, _ in group for w in ws]
        starts = [i == 0 for ws, _ in group for i in range(len(ws))]
        biluo = [t for _, ts in group for t in iob_to_biluo([clean(tag, drop) for tag in ts])]
        doc = Doc(vocab, words=words, sent_starts=starts)
        doc.ents = biluo_tags_to_spans(doc, biluo)
        docs.append(doc)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs).to_disk(args.output)
    n_ents = sum(len(doc.ents) for doc in docs)
    print(f"{len(sentences)} sentences, {len(docs)} docs, {n_ents} entities -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
