"""What decoding choices buy a trained crf_tagger: Viterbi, per-token marginals, a tag dictionary.

    python -m benchmarks.decoding_ablation training/cpu/model-best \
        corpus/en_ewt-ud-train.spacy corpus/en_ewt-ud-dev.spacy [--attr tag_] [--min-counts 1 2 5 10 20]

Tags the dev sentences on their gold tokens (one sentence per doc, as
`spacy evaluate --gold-preproc` does) and prints, as JSON, the accuracy of:
- "viterbi": the component's own output, the best path;
- "marginal": each token's most probable tag under the exact marginals (the
  decision that maximises the expected number of right tokens);
- "dictionary_k": Viterbi, except that a word seen at least k times in training
  whose Viterbi tag was never seen with it takes, of the tags it was seen
  with, the one with the highest marginal (a tag dictionary, as classic POS
  taggers use).
For a single-target tagger (`target = "tag"` or `"pos"`) of a pipeline's
"crf_tagger" component.
"""

import collections
import json
from typing import Dict, Iterable, List, Sequence, Set

import numpy
import spacy
from spacy.tokens import Doc, DocBin

from .common import gold_sentences, model_train_dev_parser


def tag_dictionary(docs: Iterable[Doc], attr: str) -> Dict[str, collections.Counter]:
    """word -> Counter of the tags it has in docs."""
    tags: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for doc in docs:
        for token in doc:
            tags[token.text][getattr(token, attr)] += 1
    return tags


def restrict_to_dictionary(
    words: List[str],
    viterbi: List[str],
    marginals: numpy.ndarray,
    labels: Sequence[str],
    dictionary: Dict[str, collections.Counter],
    min_count: int,
) -> List[str]:
    """The Viterbi tags, with each tag a word seen min_count+ times never had
    replaced by its most probable (by marginals) tag among those it had."""
    index = {label: i for i, label in enumerate(labels)}
    tags = list(viterbi)
    for i, word in enumerate(words):
        seen = dictionary.get(word)
        if not seen or sum(seen.values()) < min_count or tags[i] in seen:
            continue
        allowed: Set[int] = {index[tag] for tag in seen if tag in index}
        if allowed:
            tags[i] = labels[max(allowed, key=lambda j: marginals[i, j])]
    return tags


def main() -> None:
    parser = model_train_dev_parser(__doc__)
    parser.add_argument("--min-counts", type=int, nargs="+", default=[1, 2, 5, 10, 20])
    args = parser.parse_args()
    nlp = spacy.load(args.model)
    tagger = nlp.get_pipe("crf_tagger")
    dictionary = tag_dictionary(DocBin().from_disk(args.train).get_docs(nlp.vocab), args.attr)
    gold = gold_sentences(args.dev, nlp.vocab)
    words = [[token.text for token in doc] for doc in gold]
    docs = [Doc(nlp.vocab, words=w) for w in words]
    marginals = tagger.marginals(docs)  # reads the docs, sets nothing
    tagged = list(nlp.pipe(docs))
    labels = tagger.tags
    gold_tags = [[getattr(token, args.attr) for token in doc] for doc in gold]
    viterbi = [[getattr(token, args.attr) for token in doc] for doc in tagged]
    if not set(labels) >= {tag for doc in viterbi for tag in doc}:
        parser.error(f"the tagger's labels are not {args.attr} values: use a single-target model and its --attr")
    decoded = {
        "viterbi": viterbi,
        "marginal": [[labels[j] for j in m.argmax(-1)] if len(m) else [] for m in marginals],
    }
    for k in args.min_counts:
        decoded[f"dictionary_{k}"] = [
            restrict_to_dictionary(w, v, m, labels, dictionary, k) for w, v, m in zip(words, viterbi, marginals)
        ]
    n_tokens = sum(len(doc) for doc in gold_tags)

    def accuracy(tags):
        right = sum(p == g for pred, gold_doc in zip(tags, gold_tags) for p, g in zip(pred, gold_doc))
        return round(100 * right / max(n_tokens, 1), 2)

    result = {"model": args.model, "attr": args.attr, "tokens": n_tokens}
    result.update({name: accuracy(tags) for name, tags in decoded.items()})
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
