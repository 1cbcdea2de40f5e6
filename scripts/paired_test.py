"""Compare two taggers token by token on gold-tokenised dev data (McNemar's test).

    python -m scripts.paired_test training/cpu/model-best training/softmax/model-best \
        corpus/en_ewt-ud-dev.spacy [--attr tag_]

Prints each model's accuracy, the tokens where exactly one of them is right, and
McNemar's chi-squared (with continuity correction; 3.84 is p = 0.05).
"""
import argparse
import json

import spacy

from .common import gold_sentences, tag_gold_tokens


def predictions(model_path, gold_docs, attr):
    return [getattr(token, attr) for doc in tag_gold_tokens(model_path, gold_docs) for token in doc]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_a")
    parser.add_argument("model_b")
    parser.add_argument("dev")
    parser.add_argument("--attr", default="tag_", help="tag_ or pos_")
    args = parser.parse_args()
    gold_docs = gold_sentences(args.dev, spacy.blank("en").vocab)
    gold = [getattr(token, args.attr) for doc in gold_docs for token in doc]
    a = predictions(args.model_a, gold_docs, args.attr)
    b = predictions(args.model_b, gold_docs, args.attr)
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
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
