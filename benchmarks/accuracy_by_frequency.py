"""Where a tagger's errors are: accuracy by how often each word was seen in training.

    python -m benchmarks.accuracy_by_frequency training/cpu/model-best \
        corpus/en_ewt-ud-train.spacy corpus/en_ewt-ud-dev.spacy [--attr tag_] [--top 10]

Tags the dev sentences on their gold tokens (one sentence per doc, as
`spacy evaluate --gold-preproc` does) and prints, as JSON, the share of dev
tokens, the accuracy and the error count for words never seen in the training
data, seen once, 2-9 times and 10 or more times, and the most frequent
(gold, predicted) confusions.
"""

import collections
import json

import spacy
from spacy.tokens import DocBin

from .common import gold_sentences, model_train_dev_parser, tag_gold_tokens

BUCKETS = [("unseen", 0, 0), ("once", 1, 1), ("2-9", 2, 9), ("10+", 10, None)]


def bucket_of(count: int) -> str:
    return next(name for name, low, high in BUCKETS if count >= low and (high is None or count <= high))


def main() -> None:
    parser = model_train_dev_parser(__doc__)
    parser.add_argument("--top", type=int, default=10, help="confusions to list")
    args = parser.parse_args()
    blank = spacy.blank("en")
    counts = collections.Counter(t.text for doc in DocBin().from_disk(args.train).get_docs(blank.vocab) for t in doc)
    gold = gold_sentences(args.dev, blank.vocab)
    predicted = tag_gold_tokens(args.model, gold)
    right, total = collections.Counter(), collections.Counter()
    confusions = collections.Counter()
    for gold_doc, doc in zip(gold, predicted):
        for g, p in zip(gold_doc, doc):
            bucket = bucket_of(counts[g.text])
            total[bucket] += 1
            if getattr(g, args.attr) == getattr(p, args.attr):
                right[bucket] += 1
            else:
                confusions[f"{getattr(g, args.attr)} -> {getattr(p, args.attr)}"] += 1
    n_tokens = sum(total.values())
    result = {
        "model": args.model,
        "attr": args.attr,
        "tokens": n_tokens,
        "accuracy": round(100 * sum(right.values()) / max(n_tokens, 1), 2),
        "by_training_count": {
            name: {
                "share": round(100 * total[name] / max(n_tokens, 1), 1),
                "accuracy": round(100 * right[name] / max(total[name], 1), 2),
                "errors": total[name] - right[name],
            }
            for name, _, _ in BUCKETS
        },
        "confusions": dict(confusions.most_common(args.top)),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
