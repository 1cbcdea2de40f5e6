"""crf_tagger.uncertainty: per doc, the exact probability of the best path and
each token's marginal entropy (for active learning), batched like predict."""

import numpy
import pytest
from spacy.training import Example

from ..helpers import TRAIN_DATA, make_nlp, train

TEXTS = ["I like green eggs", "Eat blue ham", "", "ham", "I like blue ham and green eggs , I eat ham"]


@pytest.fixture(scope="module")
def tagger_nlp():
    nlp = make_nlp()
    examples = [Example.from_dict(nlp.make_doc(text), annots) for text, annots in TRAIN_DATA]
    train(nlp, examples, steps=5)  # briefly: the model is still unsure
    return nlp


@pytest.mark.parametrize("window", [0, 4])
def test_uncertainty_equals_the_exact_methods(tagger_nlp, window):
    tagger = tagger_nlp.get_pipe("crf_tagger")
    tagger.cfg["window"] = window
    try:
        docs = [tagger_nlp.make_doc(text) for text in TEXTS]
        results = tagger.uncertainty(docs)
        best = tagger.nbest(docs, k=1)
        marginals = tagger.marginals(docs)
    finally:
        tagger.cfg["window"] = 8192
    assert len(results) == len(docs)
    for doc, (prob, entropy), ranked, probs in zip(docs, results, best, marginals):
        assert prob == pytest.approx(float(numpy.exp(ranked[0][1])), rel=1e-4)
        assert entropy.shape == (len(doc),)
        expected = -(probs * numpy.log(numpy.clip(probs, 1e-300, None))).sum(-1)
        numpy.testing.assert_allclose(entropy, expected, rtol=1e-4, atol=1e-6)
        if len(doc):
            assert 0.0 < prob < 1.0 and (entropy >= 0).all()
        else:
            assert prob == 1.0
