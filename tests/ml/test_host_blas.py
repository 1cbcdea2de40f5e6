"""on_host_blas: the embedding's matrix products on numpy's BLAS, same results."""

import numpy
import spacy
from spacy.training import Example
from thinc.api import Maxout, Ops

from spacy_crf.ml.host_blas import HOST_BLAS_OPS, on_host_blas

from ..helpers import HASH_CHAR_EMBED, SMALL_MODEL


def _maxout_pair():
    X = numpy.random.default_rng(0).standard_normal((30, 12)).astype("f")
    blis = Maxout(5, 12, nP=3, normalize=True)
    blis.initialize(X=X)
    host = on_host_blas(Maxout(5, 12, nP=3, normalize=True))
    host.initialize(X=X)
    host.from_bytes(blis.to_bytes())
    return blis, host, X


def test_numpy_ops_nodes_get_numpy_blas():
    _, host, _ = _maxout_pair()
    assert all(node.ops is HOST_BLAS_OPS for node in host.walk())
    assert not HOST_BLAS_OPS.use_blis


def test_outputs_and_gradients_equal_blis():
    blis, host, X = _maxout_pair()
    Y_blis, back_blis = blis(X, is_train=True)
    Y_host, back_host = host(X, is_train=True)
    numpy.testing.assert_allclose(Y_host, Y_blis, rtol=1e-5, atol=1e-6)
    dY = numpy.random.default_rng(1).standard_normal(Y_blis.shape).astype("f")
    numpy.testing.assert_allclose(back_host(dY), back_blis(dY), rtol=1e-4, atol=1e-5)
    for node_blis, node_host in zip(blis.walk(), host.walk()):
        for name in node_blis.param_names:
            if node_blis.has_grad(name):
                numpy.testing.assert_allclose(node_host.get_grad(name), node_blis.get_grad(name), rtol=1e-5, atol=1e-5)


def test_other_ops_are_left_alone():
    model = Maxout(5, 12, nP=3, normalize=True)
    for node in model.walk():
        node.ops = Ops()  # e.g. CupyOps on a GPU
    on_host_blas(model)
    assert all(type(node.ops) is Ops for node in model.walk())


def test_the_component_embedding_runs_on_numpy_blas():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {**SMALL_MODEL, "tok2vec": HASH_CHAR_EMBED}})
    nlp.initialize(get_examples=lambda: [Example.from_dict(nlp.make_doc("I like ham"), {"tags": ["N", "V", "N"]})])
    embed = nlp.get_pipe("crf_tagger").model.get_ref("tok2vec")
    mixers = [node for node in embed.walk() if node.name == "maxout"]
    assert mixers and all(node.ops is HOST_BLAS_OPS for node in mixers)
