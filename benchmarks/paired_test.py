"""Compare two taggers token by token on gold-tokenised dev data (McNemar's test).

    python -m benchmarks.paired_test training/cpu/model-best training/softmax/model-best \
        corpus/en_ewt-ud-dev.spacy [--attr tag_|pos_|morph|pos+morph|tag+pos+morph] [--output OUT.json]
    python -m benchmarks.paired_test A B DEV --attr pos_ --attr morph --output-dir metrics/

Prints each model's accuracy, the tokens where exactly one of them is right, and
McNemar's chi-squared (with continuity correction; 3.84 is p = 0.05). Tokens
without a gold value (e.g. no FEATS column) are left out; "morph" compares the
whole feature set, "pos+morph" the UPOS and the whole feature set,
"tag+pos+morph" the tag as well (UDPipe's AllTags). Several --attr compare
several values from one tagging of the dev data by each model; --output-dir
writes each comparison to paired_<attr>.json (paired_pos.json for pos_).
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


ATTRS = ["tag_", "pos_", "morph", "pos+morph", "tag+pos+morph"]


def compare(gold_docs, docs_a, docs_b, attr):
    """McNemar's test of two taggings of the gold docs on one compared value."""
    gold = [value(token, attr) for doc in gold_docs for token in doc]
    a = [value(token, attr) for doc in docs_a for token in doc]
    b = [value(token, attr) for doc in docs_b for token in doc]
    known = [i for i, g in enumerate(gold) if g]
    gold, a, b = [gold[i] for i in known], [a[i] for i in known], [b[i] for i in known]
    only_a = sum(x == g != y for x, y, g in zip(a, b, gold))
    only_b = sum(y == g != x for x, y, g in zip(a, b, gold))
    chi2 = (abs(only_a - only_b) - 1) ** 2 / max(only_a + only_b, 1)
    return {
        "tokens": len(gold),
        "acc_a": round(100 * sum(x == g for x, g in zip(a, gold)) / len(gold), 2),
        "acc_b": round(100 * sum(y == g for y, g in zip(b, gold)) / len(gold), 2),
        "only_a_right": only_a,
        "only_b_right": only_b,
        "mcnemar_chi2": round(chi2, 2),
        "attr": attr,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_a")
    parser.add_argument("model_b")
    parser.add_argument("dev")
    parser.add_argument(
        "--attr", action="append", choices=ATTRS, help="the compared value (default tag_); repeat it to compare several"
    )
    parser.add_argument("--output", type=Path, help="also write the result as JSON (one --attr)")
    parser.add_argument("--output-dir", type=Path, help="also write each result to paired_<attr>.json here")
    args = parser.parse_args()
    attrs = list(dict.fromkeys(args.attr or ["tag_"]))
    if args.output and len(attrs) > 1:
        parser.error("--output takes one --attr; use --output-dir for several")
    gold_docs = gold_sentences(args.dev, spacy.blank("en").vocab)
    docs_a = list(tag_gold_tokens(args.model_a, gold_docs))
    docs_b = list(tag_gold_tokens(args.model_b, gold_docs))
    results = {
        attr: {**compare(gold_docs, docs_a, docs_b, attr), "model_a": args.model_a, "model_b": args.model_b}
        for attr in attrs
    }
    print(json.dumps(results[attrs[0]] if len(attrs) == 1 else results, indent=2))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results[attrs[0]], indent=2) + "\n")
    if args.output_dir:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for attr, result in results.items():
            (args.output_dir / f"paired_{attr.rstrip('_')}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
