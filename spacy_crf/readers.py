"""A training corpus of gold-tokenised sentences and whole multi-sentence docs.

spaCy's `Corpus` gives either one gold-tokenised sentence per example
(`gold_preproc = true`) or whole docs re-tokenised by the pipeline's tokenizer
(`false`). A BiLSTM trained on single sentences only has never read across a
sentence boundary, yet raw text reaches it as docs of many sentences. This
reader keeps the treebank's own words and gives each doc of the .spacy file
either whole or cut into its sentences, at random, so the model learns both.
"""

import random
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Corpus, Example
from spacy.training.augment import dont_augment
from spacy.training.corpus import FILE_TYPE, walk_corpus
from spacy.util import registry

from .errors import Errors


@registry.readers("spacy_crf.SentencesAndDocs.v1")
def create_sentences_and_docs_reader(
    path: Union[str, Path],
    whole_docs: float = 0.5,
    gold_preproc: bool = True,
    max_length: int = 0,
    limit: int = 0,
    augmenter: Optional[Callable[[Language, Example], Iterable[Example]]] = None,
) -> Callable[[Language], Iterator[Example]]:
    """A reader of gold-tokenised examples: each doc of the corpus whole
    (with probability `whole_docs`, drawn from Python's `random`, which
    `spacy train` seeds) or as its sentences (as `gold_preproc = true` gives
    them; a doc without sentence boundaries is one sentence). Its settings
    are spacy.Corpus.v1's, so a config can switch `@readers` alone.

    path (Union[str, Path]): a .spacy file or a folder of them.
    whole_docs (float): the share of docs given whole, 0 to 1; 0 equals
        spacy.Corpus.v1 with gold_preproc = true.
    gold_preproc (bool): must be true: the words are always the corpus's own.
    max_length (int): a doc longer than this many tokens is never given
        whole (0: no limit).
    limit (int): read at most this many docs (0: all).
    augmenter (Optional[Callable]): as spacy.Corpus.v1's, applied to each example.
    RETURNS (Callable[[Language], Iterator[Example]]): the reader.
    """
    if not 0.0 <= whole_docs <= 1.0 or not gold_preproc:
        raise ValueError(Errors.E030.format(value=whole_docs, gold_preproc=gold_preproc))
    corpus = Corpus(path, gold_preproc=True, limit=limit)
    augment = augmenter or dont_augment

    def read(nlp: Language) -> Iterator[Example]:
        for reference in corpus.read_docbin(nlp.vocab, walk_corpus(corpus.path, FILE_TYPE)):
            fits = not max_length or len(reference) <= max_length
            if fits and whole_docs and (whole_docs >= 1.0 or random.random() < whole_docs):
                parts = [reference]
            elif reference.has_annotation("SENT_START"):
                parts = [sent.as_doc() for sent in reference.sents]
            else:
                parts = [reference]
            for part in parts:
                if len(part):
                    yield from augment(nlp, gold_tokens_example(nlp, part))

    return read


def gold_tokens_example(nlp: Language, reference: Doc) -> Example:
    """An example whose predicted doc has the reference's own words and spaces."""
    words = [token.text for token in reference]
    spaces = [bool(token.whitespace_) for token in reference]
    return Example(Doc(nlp.vocab, words=words, spaces=spaces), reference)
