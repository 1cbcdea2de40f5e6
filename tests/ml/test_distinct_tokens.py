"""per_distinct_token: predict once per distinct token key, the same vectors
as running every token, for every HashCharEmbed version and input kind."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.util import registry

import spacy_crf.ml.distinct_tokens as distinct
from spacy_crf.ml.distinct_tokens import distinct_tokens

from ..helpers import HASH_CHAR_EMBED

TEXTS = ["the cat saw the dog", "The dog saw the cat .", "", "cat", "the the the cat cat dog saw saw"]
CHAR_CNN = {"@architectures": "spacy_crf.CharCNN.v1", "width": 8, "nM": 6, "window": 1, "nP": 2, "max_bytes": 10}
EMBEDS = {
    "v1": {k: v for k, v in HASH_CHAR_EMBED.items() if k not in ("min_count", "word_dropout")},
    "v2": HASH_CHAR_EMBED,
    "v3": HASH_CHAR_EMBED,
    "v4": {**HASH_CHAR_EMBED, "word_encoder": CHAR_CNN},
    "v2 with static vectors": {**HASH_CHAR_EMBED, "include_static_vectors": True},
    "v2 hashing a token attribute": {**HASH_CHAR_EMBED, "attrs": ["NORM", "PREFIX", "SUFFIX", "TAG"]},
}


def build(name):
    config = {**EMBEDS[name], "@architectures": f"spacy_crf.HashCharEmbed.{name.split()[0]}"}
    return registry.resolve({"embed": config})["embed"]


def make_docs(nlp):
    docs = [nlp.make_doc(text) for text in TEXTS]
    docs[1][2].norm_ = "looked"  # a token's own NORM: "saw" is embedded differently here
    for doc in docs:
        for i, token in enumerate(doc):
            token.tag_ = "A" if i % 2 else "B"
    return docs


def every_token(model, docs, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(distinct, "distinct_tokens", lambda *args: None)
        return model.predict(docs)


@pytest.mark.parametrize("name", list(EMBEDS))
def test_predict_equals_running_every_token(name, monkeypatch):
    nlp = spacy.blank("en")
    for word in ("the", "cat", "dog"):
        nlp.vocab.set_vector(word, numpy.arange(4, dtype="f") + len(word))
    docs = make_docs(nlp)
    model = build(name)
    model.initialize(X=docs)
    calls = []
    real = distinct.distinct_tokens
    monkeypatch.setattr(distinct, "distinct_tokens", lambda *args: calls.append(1) or real(*args))
    grouped = model.predict(docs)
    assert calls, "the grouped path did not run"
    expected = every_token(model, docs, monkeypatch)
    assert [len(y) for y in grouped] == [len(doc) for doc in docs]
    for y, x in zip(grouped, expected):
        numpy.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)
    saw = grouped[0][2], grouped[1][2], grouped[4][6]
    assert numpy.array_equal(saw[0], saw[2]) and not numpy.allclose(saw[0], saw[1])


def test_spans_are_embedded_like_their_tokens(monkeypatch):
    nlp = spacy.blank("en")
    docs = make_docs(nlp)
    model = build("v2")
    model.initialize(X=docs)
    spans = [docs[0][1:4], docs[4][0:8], docs[1][:]]
    grouped = model.predict(spans)
    for y, x in zip(grouped, every_token(model, spans, monkeypatch)):
        numpy.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


def test_training_runs_every_token(monkeypatch):
    nlp = spacy.blank("en")
    docs = make_docs(nlp)
    model = build("v2")
    model.initialize(X=docs)
    monkeypatch.setattr(distinct, "distinct_tokens", lambda *args: pytest.fail("grouped while training"))
    vectors, backprop = model.begin_update(docs)
    backprop([numpy.ones_like(v) for v in vectors])


def test_distinct_tokens_declines_when_it_cannot_help():
    nlp = spacy.blank("en")
    assert distinct_tokens([nlp.make_doc("cat")], [spacy.attrs.NORM]) is None
    assert distinct_tokens([nlp.make_doc("")], [spacy.attrs.NORM]) is None
    assert distinct_tokens([nlp.make_doc("a b c d e")], [spacy.attrs.NORM]) is None
    doc = Doc(nlp.vocab, words=["a", "b", "a", "a", "b"])
    distinct, inverse = distinct_tokens([doc], [spacy.attrs.NORM])
    first = distinct.rows
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0, 0, 1]
