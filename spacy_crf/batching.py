"""How `crf_tagger.pipe` groups a stream of docs into the batches it predicts.

spaCy's components take `batch_size` docs at a time. The BiLSTM's cost per
token falls with the number of rows it runs side by side (its matrix products
get taller), so a batch of 256 one-sentence docs (about 3,000 tokens) is
tagged at about half the rate of 256 ten-sentence docs. Batches are therefore
grown by whole docs until they also hold enough tokens.
"""
from typing import Iterable, Iterator, List

from spacy.tokens import Doc


def word_batches(stream: Iterable[Doc], batch_size: int, batch_words: int) -> Iterator[List[Doc]]:
    """Cut a stream of docs into batches, in order.

    A batch closes once it holds at least `batch_size` docs and at least
    `batch_words` tokens; the last batch holds what is left. With
    batch_words = 0 these are spaCy's batches of `batch_size` docs.

    stream (Iterable[Doc]): the docs.
    batch_size (int): the least number of docs in a batch (at least 1).
    batch_words (int): the least number of tokens in a batch (0: no least).
    YIELDS (List[Doc]): the batches; every doc once, in the stream's order.
    """
    batch: List[Doc] = []
    words = 0
    for doc in stream:
        batch.append(doc)
        words += len(doc)
        if len(batch) >= batch_size and words >= batch_words:
            yield batch
            batch, words = [], 0
    if batch:
        yield batch
