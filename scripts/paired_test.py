"""Compare two taggers token by token on gold-tokenised dev data (McNemar's test).

    python -m scripts.paired_test training/cpu/model-best training/softmax/model-best \
        corpus/en_ewt-ud-dev.spacy [--attr tag_|pos_|morph|pos+morph|tag+pos+morph] [--output OUT.json]

Prints each model's accuracy, the tokens where exactly one of them is right, and
McNemar's chi-squared (with continuity correction; 3.84 is p = 0.05). Tokens
without a gold value (e.g. no FEATS column) are left out; "morph" compares the
whole feature set, "pos+morph" the UPOS and the whole feature set,
"tag+pos+morph" the tag as well (UDPipe's AllTags).
"""
import argparse
import json
from pathlib import Path

import spacy

from .common import gold_sentences, tag_gold_tokens


def value(token, attr):
    """The compared value of a token: an attribute, or its features as a string."""
    if attr == "morph":
        # "_": annotated with no features; "": no annotation (left out)
        return (str(token.morph) or "_") if token.has_morph() else ""
    if attr == "pos+morph":
        morph = value(token, "morph")
        return f"{token.pos_}|{morph}" if token.pos_ and morph else ""
    if attr == "tag+pos+morph":
        pos_morph = value(token, "pos+morph")
        return f"{token.tag_} {pos_morph}" if token.tag_ and pos_morph else ""
    return getattr(token, attr)


def predictions(model_path, gold_docs, attr):
    return [value(token, attr) for doc in tag_gold_tokens(model_path, gold_docs) for token in doc]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_a")
    parser.add_argument("model_b")
    parser.add_argument("dev")
    parser.add_argument("--attr", default="tag_", choices=["tag_", "pos_", "morph", "pos+morph", "tag+pos+morph"])
    parser.add_argument("--output", type=Path, help="also write the result as JSON")
    args = parser.parse_args()
    gold_docs = gold_sentences(args.dev, spacy.blank("en").vocab)
    gold = [value(token, args.attr) for doc in gold_docs for token in doc]
    a = predictions(args.model_a, gold_docs, args.attr)
    b = predictions(args.model_b, gold_docs, args.attr)
    known = [i for i, g in enumerate(gold) if g]
    gold, a, b = [gold[i] for i in known], [a[i] for i in known], [b[i] for i in known]
    only_a = sum(x == g != y for x, y, g in zip(a, b, gold))
    only_b = sum(y == g != x for x, y, g in zip(a, b, gold))
    chi2 = (abs(only_a - only_b) - 1) ** 2 / max(only_a + only_b, 1)
    result = {
        "tokens": len(gold),
        "acc_a": round(100 * sum(x == g for x, g in zip(a, gold)) / len(gold), 2),
        "acc_b": round(100 * sum(y == g for y, g in zip(b, gold)) / len(gold), 2),
        "only_a_right": only_a,
        "only_b_right": only_b,
        "mcnemar_chi2": round(chi2, 2),
        "attr": args.attr,
        "model_a": args.model_a,
        "model_b": args.model_b,
    }
    print(json.dumps(result, indent=2))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
