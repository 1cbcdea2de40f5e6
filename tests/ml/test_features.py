"""The batched feature layers equal spaCy's per-doc FeatureExtractor and
CharacterEmbed: outputs, gradients (spaCy's and the exact sum), odd input."""

import numpy
import pytest
import spacy
from numpy.testing import assert_array_equal
from spacy.ml._character_embed import CharacterEmbed
from spacy.ml.featureextractor import FeatureExtractor
from spacy.tokens import Doc

from spacy_crf.ml.features import batch_features, byte_embed, utf8_ends

WORDS = [
    ["I", "like", "green", "eggs", "and", "ham", "."],
    ["a"],
    [],
    ["Über", "naïve", "日本語", "café", "supercalifragilistic", "e", "e", "eggs", "😀"],
    ["like", "like", "I", "ham"],
]


@pytest.fixture
def docs():
    nlp = spacy.blank("en")
    return [Doc(nlp.vocab, words=words) for words in WORDS]


@pytest.mark.parametrize("nC", [1, 4, 8, 13])
def test_utf8_ends_equal_spacys_per_doc_arrays(docs, nC):
    expected = [doc.to_utf8_array(nr_char=nC) for doc in docs if len(doc)]
    assert_array_equal(utf8_ends(docs, nC), numpy.concatenate(expected))
    assert utf8_ends([], nC).shape == (0, nC)
    assert utf8_ends(docs[2:3], nC).shape == (0, nC)


def test_batch_features_equal_spacys_feature_extractor(docs):
    columns = ["NORM", "PREFIX", "SUFFIX", "SHAPE", "ORTH"]
    for batch in (docs, [], docs[2:3]):
        got, _ = batch_features(columns)(batch, is_train=False)
        want, _ = FeatureExtractor(columns)(batch, is_train=False)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert_array_equal(g, w)
    # spans: their rows of their doc's features
    spans = [docs[0][1:4], docs[3][2:3], docs[0][0:0]]
    got, _ = batch_features(columns)(spans, is_train=False)
    want = [FeatureExtractor(columns)([span.doc], False)[0][0][span.start : span.end] for span in spans]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert_array_equal(g, w)


def layers(nM=3, nC=6, exact_gradient=False):
    ours = byte_embed(nM, nC, exact_gradient)
    spacys = CharacterEmbed(nM, nC)
    ours.initialize()
    spacys.initialize()
    E = numpy.random.default_rng(0).standard_normal(ours.get_param("E").shape).astype("f")
    ours.set_param("E", E.copy())
    spacys.set_param("E", E.copy())
    return ours, spacys


def gradients_of(docs, nO, seed=1):
    rng = numpy.random.default_rng(seed)
    return [rng.standard_normal((len(doc), nO)).astype("f") for doc in docs]


def test_byte_embed_outputs_and_spacys_gradient_are_spacys_exactly(docs):
    ours, spacys = layers()
    got, backprop = ours(docs, is_train=True)
    want, spacy_backprop = spacys(docs, is_train=True)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        assert_array_equal(g, w)
    d_output = gradients_of(docs, ours.get_dim("nO"))
    assert backprop(d_output) == spacy_backprop(d_output) == []
    assert_array_equal(ours.get_grad("E"), spacys.get_grad("E"))


def test_exact_gradient_sums_every_token(docs):
    """exact_gradient=True: the table's gradient is the sum over all tokens,
    computed here token by token; spaCy's keeps one token per doc and byte."""
    nM, nC = 3, 6
    ours, spacys = layers(nM, nC, exact_gradient=True)
    _, backprop = ours(docs, is_train=True)
    _, spacy_backprop = spacys(docs, is_train=True)
    d_output = gradients_of(docs, nM * nC)
    backprop(d_output)
    spacy_backprop(d_output)
    want = numpy.zeros((nC, 256, nM), dtype="f")
    for doc, d_doc in zip(docs, d_output):
        for ids, d_token in zip(doc.to_utf8_array(nr_char=nC), d_doc.reshape(-1, nC, nM)):
            for position, byte in enumerate(ids):
                want[position, byte] += d_token[position]
    numpy.testing.assert_allclose(ours.get_grad("E"), want, rtol=1e-5, atol=1e-6)
    # the docs repeat words ("e", "like"): spaCy's gradient differs there
    assert not numpy.allclose(spacys.get_grad("E"), want)


def test_byte_embed_of_no_tokens(docs):
    ours, _ = layers()
    for batch in ([], docs[2:3]):
        got, backprop = ours(batch, is_train=True)
        assert [g.shape for g in got] == [(0, ours.get_dim("nO"))] * len(batch)
        backprop([numpy.zeros(g.shape, dtype="f") for g in got])


def test_utf8_ends_of_docs_from_two_vocabs(docs):
    other = Doc(spacy.blank("en").vocab, words=["zyzzyva", "Qatar"])
    got = utf8_ends([docs[0], other], 6)
    want = numpy.concatenate([docs[0].to_utf8_array(nr_char=6), other.to_utf8_array(nr_char=6)])
    assert_array_equal(got, want)
