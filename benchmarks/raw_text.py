"""Where accuracy goes from gold tokens to raw text: one model scored four ways.

    python -m benchmarks.raw_text MODEL DEV.spacy [--output OUT.json] [--components.crf_tagger.by_sentence true]

Settings after the arguments override the pipeline's config as it loads, as
`spacy train` takes them.

- `gold_sentences`: the treebank's words, one sentence per doc (what
  `spacy evaluate --gold-preproc` scores and the configs train on);
- `gold_docs`: the treebank's words, whole docs of several sentences (what
  `spacy convert --n-sents` made), read as the pipeline reads them: across
  sentence boundaries, or, with the spacy-crf component's `by_sentence`, in the sentences
  spaCy's sentencizer finds;
- `raw`: the docs' text through the pipeline's own tokenizer (`spacy evaluate`
  without --gold-preproc): the words it gets wrong are scored as spaCy scores them
  (a token that does not align with one gold word has no gold label);
- `raw_by_sentence`: the same tokens, cut into sentences by spaCy's rule-based
  `sentencizer`, each sentence run through the pipeline as a doc of its own
  (as the configs train on sentences): what reading across sentence
  boundaries costs on raw text.

The step from the first to the second is the cost of multi-sentence docs, from
the second to the third the cost of tokenization; the fourth is the third with
the sentence boundaries of a rule-based sentencizer put back (for a spacy-crf
component with `by_sentence` on, the same as the third). The JSON records the
spacy-crf component's (crf_tagger, crf_morphologizer, crf_ner) `by_sentence`
as the pipeline ran. Scores are the pipeline's own
(tag_acc, pos_acc, morph_acc, whichever it has), in percent.
"""

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional

import spacy
from click.exceptions import ClickException
from spacy.cli._util import parse_config_overrides
from spacy.pipeline import Sentencizer
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Corpus, Example

from spacy_crf.readers import gold_tokens_example

from .common import print_and_write

KEYS = ("tag_acc", "pos_acc", "morph_acc")


def scores(nlp, examples: List[Example], tagged: bool = False) -> Dict[str, float]:
    """The pipeline's accuracies on the examples, in percent (those it has);
    `tagged`: the examples' predicted docs are already tagged, only scored."""
    result = Scorer(nlp).score(examples) if tagged else nlp.evaluate(examples)
    return {key: round(100 * result[key], 2) for key in KEYS if result.get(key) is not None}


def tag_by_sentence(nlp, docs: List[Doc]) -> List[Doc]:
    """The docs (tokenized, not yet tagged), each of their sentences by
    spaCy's `sentencizer` run through the pipeline as a doc of its own, and
    the sentences' tags, UPOS and morphology copied back."""
    sentencizer = Sentencizer()
    docs = [sentencizer(doc) for doc in docs]
    sentences = [sent for doc in docs for sent in doc.sents]
    for sent, tagged in zip(sentences, nlp.pipe(sent.as_doc() for sent in sentences)):
        for token, done in zip(sent, tagged):
            token.tag_, token.pos_ = done.tag_, done.pos_
            token.set_morph(done.morph)
    return docs


def crf_by_sentence(nlp) -> Optional[bool]:
    """The `by_sentence` setting of the pipeline's first spacy-crf component,
    None where it has none."""
    from spacy_crf.components import CRFComponent

    settings = [proc.cfg.get("by_sentence") for _, proc in nlp.pipeline if isinstance(proc, CRFComponent)]
    return settings[0] if settings else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("dev")
    parser.add_argument("--output", type=Path)
    args, rest = parser.parse_known_args(argv)
    try:
        overrides = parse_config_overrides(list(rest), env_var=None)  # it empties its list
    except (ClickException, SystemExit):
        parser.error(
            f"unrecognized arguments: {' '.join(rest)} (after the arguments, only config "
            "overrides such as --components.crf_tagger.by_sentence true)"
        )
    nlp = spacy.load(args.model, config=overrides)
    sentences = list(Corpus(args.dev, gold_preproc=True)(nlp))
    raw = list(Corpus(args.dev, gold_preproc=False)(nlp))
    whole = [gold_tokens_example(nlp, eg.reference) for eg in raw]
    by_sentence = tag_by_sentence(nlp, [eg.predicted.copy() for eg in raw])
    record = {
        "model": args.model,
        "dev": args.dev,
        "overrides": rest,
        "by_sentence": crf_by_sentence(nlp),
        "docs": len(raw),
        "sentences": len(sentences),
        "gold_sentences": scores(nlp, sentences),
        "gold_docs": scores(nlp, whole),
        "raw": scores(nlp, raw),
        "raw_by_sentence": scores(nlp, [Example(doc, eg.reference) for doc, eg in zip(by_sentence, raw)], tagged=True),
        "sentencizer_sentences": sum(len(list(doc.sents)) for doc in by_sentence),
    }
    print_and_write(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
