"""spacy_crf.SentencesAndDocs.v1: gold-tokenised sentences and whole docs."""

import random

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Corpus
from spacy.util import registry

from ..helpers import CONFIGS, SENTENCES, run_spacy


def multi_sentence_docs(vocab):
    """Two docs of two sentences each (9 words each), an empty doc, and a
    doc without sentence boundaries ("can't go", "ca" and "n't" as UD splits them)."""
    docs = []
    for first, second in (SENTENCES[0:2], SENTENCES[2:4]):
        words = first[0] + second[0]
        sent_starts = [True] + [False] * (len(first[0]) - 1) + [True] + [False] * (len(second[0]) - 1)
        docs.append(Doc(vocab, words=words, tags=first[1] + second[1], sent_starts=sent_starts))
    docs.append(Doc(vocab, words=[]))
    docs.append(Doc(vocab, words=["ca", "n't", "go"], spaces=[False, True, False], tags=["MD", "RB", "VB"]))
    return docs


@pytest.fixture
def corpus_path(tmp_path):
    path = tmp_path / "train.spacy"
    DocBin(docs=multi_sentence_docs(spacy.blank("en").vocab)).to_disk(path)
    return path


def words_of(examples):
    return [[t.text for t in eg.x] for eg in examples]


def read(path, **settings):
    nlp = spacy.blank("en")
    reader = registry.resolve({"r": {"@readers": "spacy_crf.SentencesAndDocs.v1", "path": str(path), **settings}})["r"]
    return list(reader(nlp))


def test_no_whole_docs_equals_spacy_gold_preproc(corpus_path):
    nlp = spacy.blank("en")
    expected = list(Corpus(corpus_path, gold_preproc=True)(nlp))
    got = read(corpus_path, whole_docs=0.0)
    assert words_of(got) == words_of(expected)
    assert [[t.tag_ for t in eg.reference] for eg in got] == [[t.tag_ for t in eg.reference] for eg in expected]
    assert len(got) == 5  # 2 + 2 sentences and the doc without boundaries


def test_all_whole_docs_keep_the_gold_words(corpus_path):
    got = read(corpus_path, whole_docs=1.0)
    assert words_of(got) == [
        SENTENCES[0][0] + SENTENCES[1][0],
        SENTENCES[2][0] + SENTENCES[3][0],
        ["ca", "n't", "go"],
    ]
    for eg in got:
        assert [t.text for t in eg.x] == [t.text for t in eg.reference] and eg.x.text == eg.reference.text
        assert eg.get_aligned("TAG", as_string=True) == [t.tag_ for t in eg.reference]  # every word aligned
    assert got[2].x.text == "can't go"


def test_a_share_of_docs_whole_drawn_from_python_random(corpus_path):
    random.seed(1)
    first = words_of(read(corpus_path, whole_docs=0.5))
    random.seed(1)
    assert words_of(read(corpus_path, whole_docs=0.5)) == first  # seeded: the same draw
    seen = set()
    for seed in range(20):
        random.seed(seed)
        seen.add(len(read(corpus_path, whole_docs=0.5)))
    assert seen == {3, 4, 5}  # both docs whole, one of them, neither


def test_limit(corpus_path):
    assert words_of(read(corpus_path, whole_docs=1.0, limit=1)) == [SENTENCES[0][0] + SENTENCES[1][0]]


def test_max_length_cuts_longer_docs_into_sentences(corpus_path):
    assert len(read(corpus_path, whole_docs=1.0, max_length=8)) == 5  # 2 + 2 sentences, and "can't go"
    assert len(read(corpus_path, whole_docs=1.0, max_length=9)) == 3


def test_an_augmenter_sees_every_example(corpus_path):
    @registry.augmenters("test_readers.twice.v1")
    def twice():
        return lambda nlp, eg: [eg, eg]

    assert len(read(corpus_path, whole_docs=1.0, augmenter={"@augmenters": "test_readers.twice.v1"})) == 6


@pytest.mark.parametrize("settings", [{"whole_docs": -0.1}, {"whole_docs": 1.5}, {"gold_preproc": False}])
def test_bad_settings_are_refused(corpus_path, settings):
    with pytest.raises(ValueError, match=r"\[E030\]"):
        read(corpus_path, **settings)


def test_spacy_train_reads_it(corpus_path, tmp_path):
    run_spacy(
        "train",
        str(CONFIGS / "cpu.cfg"),
        "--output",
        str(tmp_path / "out"),
        "--paths.train",
        str(corpus_path),
        "--paths.dev",
        str(corpus_path),
        "--corpora.train.@readers",
        "spacy_crf.SentencesAndDocs.v1",
        "--corpora.train.whole_docs",
        "0.5",
        "--training.max_steps",
        "4",
        "--training.eval_frequency",
        "2",
    )
    assert (tmp_path / "out" / "model-best").is_dir()
