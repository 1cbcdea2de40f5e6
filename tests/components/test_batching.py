"""crf_tagger.pipe's batches: batch_size docs, grown by whole docs to batch_words tokens."""

import numpy
import pytest
import spacy
from spacy import util
from spacy.tokens import Doc

from spacy_crf import CRFTagger
from spacy_crf.batching import MIN_DOC_WORDS, word_batches

from ..helpers import TEST_TEXTS, make_examples, make_nlp, train, trained_nlp


def docs_of_lengths(lengths):
    vocab = spacy.blank("en").vocab
    return [Doc(vocab, words=[f"w{i}" for i in range(n)]) for n in lengths]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7])
@pytest.mark.parametrize("batch_words", [0, 1, 4, 9, 100])
def test_word_batches_are_the_shortest_that_hold_enough(batch_size, batch_words):
    rng = numpy.random.default_rng(batch_size * 1000 + batch_words)
    docs = docs_of_lengths(rng.integers(0, 6, size=23).tolist())  # empty docs included
    batches = list(word_batches(iter(docs), batch_size, batch_words))
    assert [doc for batch in batches for doc in batch] == docs  # every doc once, in order

    def counted(docs):  # a doc counts as at least MIN_DOC_WORDS tokens
        return sum(max(len(doc), MIN_DOC_WORDS) for doc in docs)

    for batch in batches[:-1]:
        assert len(batch) >= batch_size and counted(batch) >= batch_words
        # one doc fewer would not have been enough
        shorter = batch[:-1]
        assert len(shorter) < batch_size or counted(shorter) < batch_words
    assert batches and batches[-1]


def test_word_batches_of_empty_docs_are_bounded():
    docs = docs_of_lengths([0] * 100)
    batches = list(word_batches(iter(docs), 2, 10 * MIN_DOC_WORDS))
    assert [len(batch) for batch in batches] == [10] * 10


def test_word_batches_without_words_are_spacys_minibatches():
    docs = docs_of_lengths([3, 1, 4, 1, 5, 9, 2, 6, 5])
    for batch_size in (1, 2, 4, 100):
        assert list(word_batches(docs, batch_size, 0)) == list(util.minibatch(docs, size=batch_size))


def test_word_batches_of_nothing():
    assert list(word_batches([], 8, 100)) == []


def test_word_batches_read_the_stream_lazily():
    docs = docs_of_lengths([2] * 10)
    read = []

    def stream():
        for doc in docs:
            read.append(doc)
            yield doc

    first = next(word_batches(stream(), 2, 3 * MIN_DOC_WORDS))
    assert first == docs[:3] and len(read) == 3  # nothing read beyond the first batch


@pytest.fixture(scope="module")
def trained():
    return trained_nlp()


@pytest.mark.parametrize("batch_words", [0, 3, 10_000])
def test_pipe_tags_the_same_in_any_batches(trained, batch_words, monkeypatch):
    tagger = trained.get_pipe("crf_tagger")
    texts = TEST_TEXTS * 3
    expected = [[t.tag_ for t in trained(text)] for text in texts]
    sizes = []
    predict = CRFTagger.predict

    def counting_predict(self, docs):
        sizes.append([len(doc) for doc in docs])
        return predict(self, docs)

    monkeypatch.setattr(CRFTagger, "predict", counting_predict)
    monkeypatch.setitem(tagger.cfg, "batch_words", batch_words)
    for batch_size in (1, 2, 64):
        sizes.clear()
        piped = [[t.tag_ for t in doc] for doc in trained.pipe(texts, batch_size=batch_size)]
        assert piped == expected
        assert sum(len(batch) for batch in sizes) == len(texts)
        for batch in sizes[:-1]:
            assert len(batch) >= batch_size and sum(max(n, MIN_DOC_WORDS) for n in batch) >= batch_words
        if batch_words == 10_000:
            assert len(sizes) == 1  # 15 docs: one batch, whatever the batch size


def test_a_failed_grown_batch_loses_only_its_failing_part(trained, monkeypatch):
    tagger = trained.get_pipe("crf_tagger")
    monkeypatch.setitem(tagger.cfg, "batch_words", 10_000)  # all the docs in one grown batch
    predict = CRFTagger.predict
    failed = []

    def failing_predict(self, docs):
        if any(doc.text == "boom" for doc in docs):
            raise RuntimeError("boom")
        return predict(self, docs)

    monkeypatch.setattr(CRFTagger, "predict", failing_predict)
    tagger.set_error_handler(lambda name, proc, docs, e: failed.append(([d.text for d in docs], str(e))))
    try:
        texts = ["I like ham", "eggs", "boom", "Eat green eggs", "ham"]
        piped = list(tagger.pipe((trained.make_doc(t) for t in texts), batch_size=2))
    finally:
        tagger.set_error_handler(util.raise_error)
    # parts of batch_size docs: only the part with the failing doc is lost
    assert failed == [(["boom", "Eat green eggs"], "boom")]
    assert [doc.text for doc in piped] == ["I like ham", "eggs", "ham"]
    assert all(token.tag_ for doc in piped for token in doc)


def test_without_an_error_handler_the_error_is_raised(trained, monkeypatch):
    def failing_predict(self, docs):
        raise RuntimeError("boom")

    monkeypatch.setattr(CRFTagger, "predict", failing_predict)
    with pytest.raises(RuntimeError, match="boom"):
        list(trained.pipe(["a b c", "d e"], batch_size=1))


def test_pipe_takes_batch_words_from_component_cfg(trained, monkeypatch):
    sizes = []
    predict = CRFTagger.predict

    def counting_predict(self, docs):
        sizes.append(len(docs))
        return predict(self, docs)

    monkeypatch.setattr(CRFTagger, "predict", counting_predict)
    texts = TEST_TEXTS * 4
    list(trained.pipe(texts, batch_size=2, component_cfg={"crf_tagger": {"batch_words": 0}}))
    assert sizes == [2] * 10
    sizes.clear()
    list(trained.pipe(texts, batch_size=2))  # the setting: one batch of all 20 docs
    assert sizes == [20]
    with pytest.raises(ValueError, match="E039"):
        list(trained.pipe(texts, component_cfg={"crf_tagger": {"batch_words": -1}}))


@pytest.mark.parametrize("value", [-1, True, 1.5, "16384", None])
def test_batch_words_is_checked(value):
    nlp = make_nlp()
    with pytest.raises(ValueError, match="E039"):
        CRFTagger(nlp.vocab, nlp.get_pipe("crf_tagger").model, batch_words=value)


def test_batch_words_is_a_run_setting(tmp_path):
    assert make_nlp().get_pipe("crf_tagger").cfg["batch_words"] == 32768  # the factory's default
    nlp = make_nlp(batch_words=7)
    train(nlp, make_examples(nlp), steps=2)
    nlp.to_disk(tmp_path)
    assert spacy.load(tmp_path).get_pipe("crf_tagger").cfg["batch_words"] == 7
    loaded = spacy.load(tmp_path, config={"components": {"crf_tagger": {"batch_words": 0}}})
    assert loaded.get_pipe("crf_tagger").cfg["batch_words"] == 0
