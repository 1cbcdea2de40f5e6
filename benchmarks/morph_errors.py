"""Where a morphological tagger's FEATS errors are: per feature, beside tag errors, by word.

    python -m benchmarks.morph_errors training/morph/en_ewt/cpu_morph/model-best \
        corpus/en_ewt-ud-dev.spacy [--top 10] [--output OUT.json]

Tags the dev sentences on their gold tokens (as `spacy evaluate --gold-preproc`
does) and prints, as JSON, for the tokens whose gold FEATS are known (the
tokens `morph_acc` counts, "_" included):

- how many have the whole feature set wrong (a token the model left without
  features is wrong), and how many of those also have a wrong UPOS, or a wrong
  tag where the model predicts tags;
- each feature's errors: tokens where the gold and predicted values differ,
  one of them absent included (a token counts once for each wrong feature);
- the most frequent errors left with a right UPOS and tag (a right UPOS for a
  model without tags), by lowercased word and the features that differ
  ("it: Case=Nom -> Case=Acc").
"""

import argparse
import collections
from pathlib import Path
from typing import Dict, Iterable, List, Optional

import spacy
from spacy.tokens import Doc

from .common import gold_sentences, print_and_write, tag_gold_tokens
from .paired_test import value


def _differing(gold: Dict[str, str], predicted: Dict[str, str]) -> List[str]:
    return sorted(name for name in set(gold) | set(predicted) if gold.get(name) != predicted.get(name))


def _show(features: Dict[str, str], names: List[str]) -> str:
    return "|".join(f"{name}={features[name]}" for name in names if name in features) or "_"


def feats_errors(gold_docs: Iterable[Doc], docs: Iterable[Doc], top: int = 10) -> dict:
    """The FEATS errors of docs against gold_docs (the same tokens, in order).

    gold_docs (Iterable[Doc]): the gold annotation; tokens without it are left out.
    docs (Iterable[Doc]): the predictions.
    top (int): how many FEATS-only errors to list.
    RETURNS (dict): tokens, feats_errors, with_pos_error, with_tag_error (None
        where no token has a predicted tag), feats_only, per_feature and
        feats_only_errors.
    """
    docs = list(docs)
    predicts_tags = any(token.tag_ for doc in docs for token in doc)
    tokens = wrong = with_pos = with_tag = 0
    per_feature: collections.Counter = collections.Counter()
    feats_only: collections.Counter = collections.Counter()
    for gold_doc, doc in zip(gold_docs, docs):
        if len(gold_doc) != len(doc):
            raise ValueError(f"a predicted doc has {len(doc)} tokens where its gold doc has {len(gold_doc)}")
        for g, p in zip(gold_doc, doc):
            # paired_test's whole feature set: "" where unannotated, "_" for none
            gold_value = value(g, "morph")
            if not gold_value:
                continue
            tokens += 1
            if value(p, "morph") == gold_value:
                continue
            wrong += 1
            gold, predicted = g.morph.to_dict(), p.morph.to_dict()
            names = _differing(gold, predicted)
            per_feature.update(names)
            pos_wrong = bool(g.pos_) and g.pos_ != p.pos_
            tag_wrong = predicts_tags and bool(g.tag_) and g.tag_ != p.tag_
            with_pos += pos_wrong
            with_tag += tag_wrong
            if not pos_wrong and not tag_wrong:
                shown = _show(predicted, names) if p.has_morph() else "(none)"
                feats_only[f"{g.text.lower()}: {_show(gold, names)} -> {shown}"] += 1
    return {
        "tokens": tokens,
        "feats_accuracy": round(100 * (tokens - wrong) / max(tokens, 1), 2),
        "feats_errors": wrong,
        "with_pos_error": with_pos,
        "with_tag_error": with_tag if predicts_tags else None,
        "feats_only": sum(feats_only.values()),
        "per_feature": dict(per_feature.most_common()),
        "feats_only_errors": dict(feats_only.most_common(top)),
    }


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("dev")
    parser.add_argument("--top", type=int, default=10, help="FEATS-only errors to list")
    parser.add_argument("--output", type=Path, help="also write the result as JSON")
    args = parser.parse_args(argv)
    gold = gold_sentences(args.dev, spacy.blank("en").vocab)
    record = {"model": args.model, "dev": args.dev, **feats_errors(gold, tag_gold_tokens(args.model, gold), args.top)}
    print_and_write(record, args.output)


if __name__ == "__main__":
    main()
