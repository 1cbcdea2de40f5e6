"""`by_sentence`: a doc is read sentence by sentence, each sentence its own
CRF sequence, exactly as if it were a doc of its own (with a per-token
tok2vec); a doc without sentence boundaries is cut where spaCy's sentencizer
would cut it, for reading only."""

import numpy
import pytest
import spacy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, fix_random_seed

from spacy_crf.components import CRFTagger
from spacy_crf.ml import CRFBatch
from spacy_crf.ml.bilstm_crf import _convert_inputs, predict_by_pieces
from spacy_crf.ml.doc_scores import (
    DocScores,
    punctuation_sentence_starts,
    sentence_lengths,
    sentence_lengths_of,
)
from spacy_crf.targets import span_patterns

from ..helpers import HASH_CHAR_EMBED, SMALL_MODEL, make_examples, make_nlp, train
from .test_ner import ner_examples

# a per-token tok2vec: a sentence reads the same in its doc as on its own
MODEL = {**SMALL_MODEL, "tok2vec": HASH_CHAR_EMBED}
WORDS = ["I", "like", "ham", ".", "Eat", "green", "eggs", "!", "eggs", "."]
STARTS = [True, False, False, False, True, False, False, False, True, False]
VOCAB = spacy.blank("en").vocab


@pytest.fixture(scope="module")
def tagger_nlp():
    fix_random_seed(0)
    nlp = make_nlp(MODEL)
    train(nlp, make_examples(nlp), steps=20)
    return nlp


@pytest.fixture(scope="module")
def ner_nlp():
    fix_random_seed(0)
    nlp = make_nlp(MODEL, factory="crf_ner")
    train(nlp, ner_examples(nlp), steps=12)
    return nlp


def with_sentences(nlp, words=WORDS, starts=STARTS):
    return Doc(nlp.vocab, words=words, sent_starts=starts)


def sentence_docs(nlp, doc):
    return [Doc(nlp.vocab, words=[t.text for t in sent]) for sent in doc.sents]


def test_sentence_lengths():
    nlp = spacy.blank("en")
    assert sentence_lengths(with_sentences(nlp)) == [4, 4, 2]
    # the doc's own boundaries win over punctuation
    assert sentence_lengths(with_sentences(nlp, starts=[True] + [False] * 9)) == [10]
    # without boundaries: where spaCy's sentencizer would start sentences
    plain = Doc(nlp.vocab, words=WORDS)
    sentencizer = nlp.add_pipe("sentencizer")
    assert sentence_lengths(plain) == [len(sent) for sent in sentencizer(Doc(nlp.vocab, words=WORDS)).sents]
    assert sentence_lengths(plain) == [4, 4, 2] and not plain.has_annotation("SENT_START")  # read, not written
    assert sentence_lengths(Doc(nlp.vocab, words=["I", "like", "ham"])) == [3]
    assert sentence_lengths(Doc(nlp.vocab, words=["!", ".", "ham", "."])) == [2, 2]
    assert sentence_lengths(Doc(nlp.vocab, words=["."])) == [1]
    assert sentence_lengths(Doc(nlp.vocab, words=[])) == [0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "eggs", ".", "!", "?", "...", '"', ")", ",", "-", "。", "Mr."]), max_size=14))
def test_punctuation_starts_are_the_sentencizers(words):
    """The array version of the rule equals spaCy's Sentencizer.predict."""
    doc = Doc(VOCAB, words=words)
    expected = numpy.flatnonzero(Sentencizer().predict([doc])[0]) if words else []
    assert punctuation_sentence_starts(doc).tolist() == list(expected)


WORD_LISTS = st.lists(st.sampled_from(["a", "eggs", ".", "!", "?", '"', ")", "。"]), max_size=9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(WORD_LISTS, st.booleans()), min_size=1, max_size=6))
def test_a_batch_of_docs_gets_each_docs_sentences(specs):
    """sentence_lengths_of a batch (the plain docs in one pass) equals each
    doc's own: its sentence starts where it has them, the sentencizer's where not."""
    docs = [
        Doc(VOCAB, words=words, sent_starts=[i % 3 == 0 for i in range(len(words))] if marked else None)
        for words, marked in specs
    ]
    expected = []
    for doc in docs:
        if not len(doc):
            expected.append([0])
        elif doc.has_annotation("SENT_START"):
            expected.append([len(sent) for sent in doc.sents])
        else:
            starts = numpy.flatnonzero(Sentencizer().predict([doc])[0]).tolist()
            expected.append(numpy.diff(starts + [len(doc)]).tolist())
    assert sentence_lengths_of(docs) == expected
    assert [sentence_lengths(doc) for doc in docs] == expected


@pytest.mark.parametrize("chunk_size", [0, 3])
def test_pieces_score_as_docs_of_their_own(tagger_nlp, chunk_size):
    """Each sentence's rows: the same emissions, paths, marginals and n-best
    as the sentence as a doc, with chunking on top."""
    tagger = tagger_nlp.get_pipe("crf_tagger")
    tagger.model.get_ref("output_layer").attrs["chunk_size"] = chunk_size
    try:
        docs = [with_sentences(tagger_nlp), Doc(tagger_nlp.vocab, words=["eggs"]), Doc(tagger_nlp.vocab, words=[])]
        pieces = [sentence_lengths(doc) for doc in docs]
        batch = predict_by_pieces(tagger.model, docs, pieces)
        assert isinstance(batch, CRFBatch) and batch.doc_lengths == [10, 1, 0]
        parts = sentence_docs(tagger_nlp, docs[0]) + docs[1:2]
        alone = tagger.model.predict(parts)
        paths = alone.decode()
        assert [list(p) for p in batch.decode()[:2]] == [list(numpy.concatenate(paths[:3])), list(paths[3])]
        assert len(batch.decode()[2]) == 0
        numpy.testing.assert_allclose(
            batch.marginals()[0], numpy.concatenate(alone.marginals()[:3]), rtol=1e-5, atol=1e-6
        )
        log_probs = [ranked[0][1] for ranked in alone.nbest(1)[:3]]
        assert batch.nbest(1)[0][0][1] == pytest.approx(sum(log_probs), rel=1e-5)
    finally:
        tagger.model.get_ref("output_layer").attrs["chunk_size"] = 512


def test_pieces_must_cut_the_doc(tagger_nlp):
    model = tagger_nlp.get_pipe("crf_tagger").model
    doc = with_sentences(tagger_nlp)
    for bad in ([4, 4], [], [11, -1]):
        with pytest.raises(ValueError, match="do not cut a doc of 10 tokens"):
            predict_by_pieces(model, [doc], [bad])


def test_component_tags_each_sentence_as_a_doc(tagger_nlp):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    doc = with_sentences(tagger_nlp)
    expected = [t.tag_ for sent in sentence_docs(tagger_nlp, doc) for t in tagger(sent)]
    tagger.cfg["by_sentence"] = True
    try:
        assert [t.tag_ for t in tagger(with_sentences(tagger_nlp))] == expected
        # without boundaries: cut at the punctuation, the same sentences here;
        # a doc that says it is one sentence is read whole, as by_sentence = false
        plain = Doc(tagger_nlp.vocab, words=WORDS)
        one = with_sentences(tagger_nlp, starts=[True] + [False] * 9)
        whole = DocScores(tagger.model, [plain]).marginals()[0]
        mixed = DocScores(tagger.model, [plain, with_sentences(tagger_nlp), one], by_sentence=True).marginals()
        numpy.testing.assert_allclose(mixed[0], mixed[1], rtol=1e-5, atol=1e-6)
        numpy.testing.assert_allclose(mixed[2], whole, rtol=1e-5, atol=1e-6)
        assert not numpy.allclose(mixed[1], whole, atol=1e-3)  # the sentences do read differently
        assert [t.tag_ for t in tagger(Doc(tagger_nlp.vocab, words=WORDS))] == expected
        # windows (here on a sentence boundary) keep their sentences
        windowed = DocScores(tagger.model, [with_sentences(tagger_nlp)], window=8, by_sentence=True)
        assert [tagger.tags[i] for i in windowed.decode()[0]] == expected
        # a window of a doc without boundaries is cut by the rule on its own
        plain_windowed = DocScores(tagger.model, [Doc(tagger_nlp.vocab, words=WORDS)], window=8, by_sentence=True)
        assert [tagger.tags[i] for i in plain_windowed.decode()[0]] == expected
        numpy.testing.assert_allclose(
            windowed.marginals()[0],
            numpy.concatenate(tagger.model.predict(sentence_docs(tagger_nlp, doc)).marginals()),
            rtol=1e-5,
            atol=1e-6,
        )
    finally:
        tagger.cfg["by_sentence"] = False


def test_entity_probabilities_by_sentence(ner_nlp):
    """Spans and their posteriors in doc offsets; a span across a sentence
    boundary has probability 0."""
    tagger = ner_nlp.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, tagger.cfg["scheme"])
    words = ["Anna", "likes", "Berlin", ".", "New", "York", "is", "big"]
    starts = [True, False, False, False, True, False, False, False]
    doc = with_sentences(ner_nlp, words, starts)
    spans = [
        [
            (start, end, kind)
            for start in range(8)
            for end in range(start + 1, min(start + 3, 8) + 1)
            for kind in range(len(types))
        ]
    ]
    probs = DocScores(tagger.model, [doc], by_sentence=True).span_probabilities(patterns, spans)[0].given
    first, second = sentence_docs(ner_nlp, doc)
    for (start, end, kind), prob in zip(spans[0], probs):
        if end <= 4:
            part, offset = first, 0
        elif start >= 4:
            part, offset = second, 4
        else:
            assert prob == 0.0
            continue
        alone = tagger.model.predict([part]).span_probabilities(patterns, [[(start - offset, end - offset, kind)]])
        assert prob == pytest.approx(float(alone[0].given[0]), rel=1e-5, abs=1e-7)


def test_sentence_starts_are_read_from_the_tokens():
    nlp = spacy.blank("en")
    partial = Doc(nlp.vocab, words=WORDS, sent_starts=[None, None, None, None, True, None, None, None, True, None])
    assert sentence_lengths(partial) == [4, 4, 2]
    doc = with_sentences(nlp)
    doc.user_hooks["sents"] = lambda d: iter([d[0:2], d[5:6]])  # a hook that skips tokens
    assert sentence_lengths(doc) == [4, 4, 2]


def test_entities_and_their_probabilities_by_sentence(ner_nlp):
    """The component's decode_with_spans path (store_entity_probs, candidates)."""
    tagger = ner_nlp.get_pipe("crf_ner")
    words = ["Anna", "likes", "Berlin", ".", "New", "York", "is", "big", "."]
    starts = [True, False, False, False, True, False, False, False, False]
    old = dict(tagger.cfg)
    tagger.cfg.update(store_entity_probs=True, candidates_key="candidates", candidates_threshold=0.05)
    try:
        doc = tagger(with_sentences(ner_nlp, words, starts))
        parts = [tagger(part) for part in sentence_docs(ner_nlp, doc)]
        tagger.cfg["by_sentence"] = True
        doc = tagger(with_sentences(ner_nlp, words, starts))
        offsets = [0, 4]
        assert len(doc.spans["candidates"]) and all(len(part.spans["candidates"]) for part in parts)
        assert [(e.start, e.end, e.label_) for e in doc.ents] == [
            (e.start + o, e.end + o, e.label_) for part, o in zip(parts, offsets) for e in part.ents
        ]
        numpy.testing.assert_allclose(
            [e._.crf_prob for e in doc.ents], [e._.crf_prob for part in parts for e in part.ents], rtol=1e-5
        )
        assert sorted((s.start, s.end, s.label_) for s in doc.spans["candidates"]) == sorted(
            (s.start + o, s.end + o, s.label_) for part, o in zip(parts, offsets) for s in part.spans["candidates"]
        )
    finally:
        tagger.cfg.clear()
        tagger.cfg.update(old)


def test_calibration_reads_the_sentences_as_the_component_does(tagger_nlp):
    """GoldScores (calibrate, reliability) cuts the docs as prediction does."""
    from spacy.training import Example

    from spacy_crf.calibrate import GoldScores

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("crf_tagger", source=tagger_nlp)
    nlp.get_pipe("crf_tagger").cfg["by_sentence"] = True
    tags = [t.tag_ for t in tagger_nlp(Doc(tagger_nlp.vocab, words=WORDS))]
    example = Example(Doc(nlp.vocab, words=WORDS), Doc(nlp.vocab, words=WORDS, tags=tags))
    ((_, _, batch),) = GoldScores(nlp, "crf_tagger", [example]).parts
    assert batch.row_lengths == [4, 4, 2]
    nlp.remove_pipe("sentencizer")  # the same sentences, found for reading only
    ((_, _, batch),) = GoldScores(nlp, "crf_tagger", [example]).parts
    assert batch.row_lengths == [4, 4, 2]


def test_setting_is_checked_and_kept(tmp_path):
    nlp = make_nlp(MODEL)
    with pytest.raises(ValueError, match="E039"):
        CRFTagger(nlp.vocab, nlp.get_pipe("crf_tagger").model, by_sentence="yes")
    nlp = make_nlp(MODEL, by_sentence=True)
    train(nlp, make_examples(nlp), steps=2)
    assert nlp.get_pipe("crf_tagger").cfg["by_sentence"] is True
    nlp.to_disk(tmp_path)
    assert spacy.load(tmp_path).get_pipe("crf_tagger").cfg["by_sentence"] is True
    assert (
        spacy.load(tmp_path, config={"components": {"crf_tagger": {"by_sentence": False}}})
        .get_pipe("crf_tagger")
        .cfg["by_sentence"]
        is False
    )


def test_raw_text_takes_overrides_and_records_the_setting(tagger_nlp, tmp_path):
    """benchmarks.raw_text loads the pipeline with the overrides after its
    arguments, records what crf_tagger ran with, and refuses anything else."""
    import json

    from benchmarks.raw_text import main as raw_text

    from ..helpers import write_docbin

    tagger_nlp.to_disk(tmp_path / "model")
    write_docbin(tmp_path / "dev.spacy")
    for value, expected in (("true", True), ("false", False)):
        output = tmp_path / f"{value}.json"
        override = ["--components.crf_tagger.by_sentence", value]
        assert raw_text([str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--output", str(output), *override]) == 0
        record = json.loads(output.read_text())
        assert record["by_sentence"] is expected and record["overrides"] == override
        assert 0.0 <= record["raw"]["tag_acc"] <= 100.0
    with pytest.raises(SystemExit):
        raw_text([str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--outptu", "x.json"])


def test_the_cpu_converter_feeds_tokens_and_splits_their_gradients(tagger_nlp):
    """On the CPU the network gets the rows' tokens one after another, and
    the gradient comes back split per row; an empty batch gives no rows back."""
    wrapper = next(node for node in tagger_nlp.get_pipe("crf_tagger").model.walk() if node.name == "pytorch")
    width = wrapper.shims[0].network.n_inputs
    X = [numpy.random.default_rng(n).random((n, width), dtype=numpy.float32) for n in (3, 0, 5)]
    args, backprop = _convert_inputs(wrapper, X, is_train=True)
    tokens, lengths = args.args
    assert tokens.shape == (8, width) and numpy.array_equal(tokens.detach().numpy(), numpy.concatenate(X))
    assert lengths.tolist() == [3, 0, 5] and args.kwargs == {}
    d_tokens = torch.arange(8 * width, dtype=torch.float32).reshape(8, width)
    d_X = backprop(ArgsKwargs(args=(d_tokens,), kwargs={}))
    assert [d.shape for d in d_X] == [(3, width), (0, width), (5, width)]
    assert numpy.array_equal(numpy.concatenate(d_X), d_tokens.numpy())
    args, backprop = _convert_inputs(wrapper, [], is_train=True)
    assert args.args[0].shape == (0, width) and args.args[1].shape == (0,)
    assert backprop(ArgsKwargs(args=(args.args[0],), kwargs={})) == []
    assert _convert_inputs(wrapper, X, is_train=False)[0].kwargs == {"packed": True}


def test_rows_are_joined_without_a_copy_where_they_lie_one_after_another():
    from spacy_crf.ml.bilstm_crf import joined_rows

    whole = numpy.arange(40, dtype=numpy.float32).reshape(10, 4)
    views = numpy.split(whole, [3, 3, 7])  # an empty one among them
    joined = joined_rows(views)
    assert numpy.array_equal(joined, whole) and numpy.shares_memory(joined, whole)
    apart = [whole[:3], whole[5:]]  # a gap between them: copied
    joined = joined_rows(apart)
    assert numpy.array_equal(joined, numpy.concatenate(apart)) and not numpy.shares_memory(joined, whole)
    swapped = [whole[5:], whole[:5]]
    assert numpy.array_equal(joined_rows(swapped), numpy.concatenate(swapped))
    columns = [whole[:3, :2], whole[3:, :2]]  # not contiguous rows
    assert numpy.array_equal(joined_rows(columns), whole[:, :2])
