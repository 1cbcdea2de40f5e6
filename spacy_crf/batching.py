"""How `crf_tagger.pipe` groups a stream of docs into the batches it predicts.

spaCy's components take `batch_size` docs at a time. crf_tagger's BiLSTM runs
the rows of a batch side by side, and the more rows it has, the less a token
costs, so 256 docs of one sentence (about 3,000 to 4,000 tokens) are tagged
more slowly per token than a batch of many more tokens: `configs/cpu.cfg`
tagged the sentences of EWT train 1.29x as fast with batches grown to 32,768
tokens (docs/design.md; `python -m benchmarks.batch_words`). Batches are therefore
grown by whole docs until they also hold enough tokens.
"""

from typing import Iterable, Iterator, List

from spacy.tokens import Doc

# For closing a batch a doc counts as at least this many tokens, so that a
# batch holds at most batch_words / MIN_DOC_WORDS docs beyond batch_size: a
# stream of empty or one-word docs still gets batches, and its first docs
# come back after a bounded wait.
MIN_DOC_WORDS = 8


def word_batches(stream: Iterable[Doc], batch_size: int, batch_words: int) -> Iterator[List[Doc]]:
    """Cut a stream of docs into batches, in order.

    A batch closes once it holds at least `batch_size` docs and at least
    `batch_words` tokens, each doc counting as at least MIN_DOC_WORDS tokens;
    the last batch holds what is left. With batch_words = 0 these are spaCy's
    batches of `batch_size` docs.

    stream (Iterable[Doc]): the docs, read lazily.
    batch_size (int): the least number of docs in a batch (at least 1).
    batch_words (int): the least number of tokens in a batch (0: no least).
    YIELDS (List[Doc]): the batches; every doc once, in the stream's order.
    """
    batch: List[Doc] = []
    words = 0
    for doc in stream:
        batch.append(doc)
        words += max(len(doc), MIN_DOC_WORDS)
        if len(batch) >= batch_size and words >= batch_words:
            yield batch
            batch, words = [], 0
    if batch:
        yield batch
