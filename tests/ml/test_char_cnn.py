"""spacy_crf.CharCNN.v2 and HashCharEmbed.v5: the CNN equals a plain torch
reference word by word (outputs and every gradient), its Numba loops equal
Thinc's code in prediction and training; odd input, training, saving and loading."""

import numpy
import pytest
import spacy
import torch
from numpy.testing import assert_allclose
from spacy.tokens import Doc

from spacy_crf.ml import char_cnn
from spacy_crf.ml.char_cnn import WORD_END, WORD_START, build_char_cnn_v2, word_symbols

from ..helpers import (
    HASH_CHAR_EMBED,
    SMALL_MODEL,
    TEST_TEXTS,
    assert_same_weights,
    make_examples,
    tags_of,
    train,
)

WORDS = [
    ["I", "like", "green", "eggs", "and", "ham", "."],
    ["a"],
    [],
    ["Über", "naïve", "日本語", "supercalifragilisticexpialidocious", "e", "e", "eggs", "😀"],
    ["like", "like", "I", "ham"],
]
CHAR_CNN = {"@architectures": "spacy_crf.CharCNN.v2", "width": 8, "nM": 6, "window": 1, "nP": 2, "max_bytes": 10}
EMBED = {
    **HASH_CHAR_EMBED,
    "@architectures": "spacy_crf.HashCharEmbed.v5",
    "min_count": 1,
    "sum_byte_gradients": True,
    "word_encoder": CHAR_CNN,
}


def build_char_cnn(*, width=64, nM=32, window=1, nP=3, max_bytes=20):
    """spacy_crf.CharCNN.v2, every setting given; these defaults are CharCNN.v1's."""
    return build_char_cnn_v2(width=width, nM=nM, window=window, nP=nP, max_bytes=max_bytes)


@pytest.fixture
def docs():
    nlp = spacy.blank("en")
    return [Doc(nlp.vocab, words=words) for words in WORDS]


def reference(layer, docs):
    """The CNN word by word in torch, from the layer's parameters."""
    conv = layer.layers[0]
    E = torch.tensor(layer.get_param("E"), requires_grad=True)
    W = torch.tensor(conv.get_param("W"), requires_grad=True)  # shape: (nO, nP, nI)
    b = torch.tensor(conv.get_param("b"), requires_grad=True)  # shape: (nO, nP)
    nW, max_bytes = layer.get_dim("nW"), layer.attrs["max_bytes"]
    outputs = []
    for token in (t for doc in docs for t in doc):
        data = token.text.encode("utf8")
        if len(data) > max_bytes:
            data = data[: max_bytes // 2] + data[len(data) - (max_bytes - max_bytes // 2) :]
        x = E[torch.tensor([WORD_START, *data, WORD_END])]  # shape: (L, nM)
        padded = torch.nn.functional.pad(x, (0, 0, nW, nW))
        windows = torch.cat([padded[i : i + len(x)] for i in range(2 * nW + 1)], dim=1)
        pieces = torch.einsum("li,opi->lop", windows, W) + b
        outputs.append(pieces.max(dim=2).values.max(dim=0).values)
    return torch.stack(outputs), (E, W, b)


@pytest.mark.parametrize("window,max_bytes", [(1, 10), (2, 4), (0, 20)])
def test_char_cnn_equals_a_word_by_word_reference(docs, window, max_bytes):
    layer = build_char_cnn(width=5, nM=4, window=window, nP=3, max_bytes=max_bytes)
    layer.initialize()
    Y, backprop = layer(docs, is_train=True)
    assert [y.shape for y in Y] == [(len(doc), 5) for doc in docs]
    want, (E, W, b) = reference(layer, docs)
    assert_allclose(numpy.concatenate(Y), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    dY = [numpy.random.default_rng(1).standard_normal(y.shape).astype("f") for y in Y]
    assert backprop(dY) == []
    (want * torch.tensor(numpy.concatenate(dY))).sum().backward()
    assert_allclose(layer.get_grad("E"), E.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_allclose(layer.layers[0].get_grad("W"), W.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_allclose(layer.layers[0].get_grad("b"), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("window,max_bytes,n_pieces", [(1, 10, 3), (2, 4, 2), (0, 20, 1), (3, 20, 3)])
def test_fused_prediction_equals_the_reference(docs, window, max_bytes, n_pieces):
    """Prediction on NumpyOps runs char_cnn_numba's loop: the reference's
    vectors; SPACY_CRF_KERNELS=torch runs Thinc's code, as training does."""
    assert char_cnn._numba_module() is not None
    layer = build_char_cnn(width=5, nM=4, window=window, nP=n_pieces, max_bytes=max_bytes)
    layer.initialize()
    # weights of both signs and a bias, so that every piece and position can win
    rng = numpy.random.default_rng(window)
    conv = layer.layers[0]
    conv.set_param("b", rng.standard_normal(conv.get_param("b").shape).astype("f"))
    want = reference(layer, docs)[0].detach().numpy()
    fused = layer.predict(docs)
    assert [y.shape for y in fused] == [(len(doc), 5) for doc in docs]
    assert_allclose(numpy.concatenate(fused), want, rtol=1e-5, atol=1e-6)
    trained = numpy.concatenate(layer(docs, is_train=True)[0])
    assert_allclose(numpy.concatenate(fused), trained, rtol=1e-5, atol=1e-6)


def test_kernels_torch_predicts_with_thincs_code(docs, monkeypatch):
    layer = build_char_cnn(width=5, nM=4, window=1, nP=3, max_bytes=10)
    layer.initialize()
    calls = []
    monkeypatch.setattr(char_cnn, "_numba_module", lambda: calls.append(1))
    monkeypatch.setenv("SPACY_CRF_KERNELS", "torch")
    layer.predict(docs)
    assert calls == []
    monkeypatch.delenv("SPACY_CRF_KERNELS")
    layer.predict(docs)
    assert calls == [1]


def copy_weights(layer, source):
    layer.set_param("E", source.get_param("E").copy())
    for name in ("W", "b"):
        layer.layers[0].set_param(name, source.layers[0].get_param(name).copy())


@pytest.mark.parametrize("window,n_pieces", [(1, 3), (3, 2), (0, 1)])
def test_fused_training_equals_thincs_code(docs, monkeypatch, window, n_pieces):
    """Training on NumpyOps runs char_cnn_numba's loops: Thinc's outputs and
    gradients (SPACY_CRF_KERNELS=torch runs Thinc's code), and after a
    prediction (is_train=False) a caller that backpropagates gets them too."""
    from spacy_crf.engine import char_cnn_numba

    calls = []
    real = char_cnn_numba.encode_words_for_training
    monkeypatch.setattr(char_cnn_numba, "encode_words_for_training", lambda *a: calls.append(1) or real(*a))
    runs = []
    for kernels, is_train in (("torch", True), ("auto", True), ("auto", False)):
        monkeypatch.setenv("SPACY_CRF_KERNELS", kernels)
        layer = build_char_cnn(width=5, nM=4, window=window, nP=n_pieces, max_bytes=10)
        layer.initialize()
        if runs:
            copy_weights(layer, runs[0][0])
        Y, backprop = layer(docs, is_train=is_train)
        dY = [numpy.random.default_rng(2).standard_normal(y.shape).astype("f") for y in Y]
        assert backprop(dY) == []
        runs.append((layer, numpy.concatenate(Y)))
    assert len(calls) == 2  # the training forward, and the backprop after the prediction
    (thinc, Y_thinc), *fused = runs
    for layer, Y in fused:
        assert_allclose(Y, Y_thinc, rtol=1e-5, atol=1e-6)
        assert_allclose(layer.get_grad("E"), thinc.get_grad("E"), rtol=1e-5, atol=1e-5)
        for name in ("W", "b"):
            assert_allclose(layer.layers[0].get_grad(name), thinc.layers[0].get_grad(name), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tie", ["everything", "pieces"])
def test_ties_go_where_thinc_sends_them(docs, monkeypatch, tie):
    """Equal pieces and positions: the first best position, then piece, as
    Thinc's Maxout and reduce_max choose, so the gradients go to the same place."""
    runs = []
    for kernels in ("torch", "auto"):
        monkeypatch.setenv("SPACY_CRF_KERNELS", kernels)
        layer = build_char_cnn(width=4, nM=3, window=1, nP=3, max_bytes=10)
        layer.initialize()
        conv = layer.layers[0]
        W = conv.get_param("W")
        if runs:
            copy_weights(layer, runs[0][0])
        elif tie == "everything":  # every piece of every position is its bias, all equal
            conv.set_param("W", numpy.zeros_like(W))
        else:  # the pieces of a filter are equal, positions differ
            conv.set_param("W", numpy.repeat(W[:, :1], W.shape[1], axis=1).copy())
        Y, backprop = layer(docs, is_train=True)
        backprop([numpy.ones_like(y) for y in Y])
        runs.append((layer, numpy.concatenate(Y)))
    (thinc, Y_thinc), (fused, Y_fused) = runs
    assert_allclose(Y_fused, Y_thinc, rtol=1e-6, atol=1e-7)
    assert_allclose(fused.get_grad("E"), thinc.get_grad("E"), rtol=1e-5, atol=1e-6)
    for name in ("W", "b"):
        assert_allclose(fused.layers[0].get_grad(name), thinc.layers[0].get_grad(name), rtol=1e-5, atol=1e-6)


def test_float64_weights_give_float64_vectors_and_gradients(docs):
    from thinc.api import NumpyOps

    layer = build_char_cnn(width=5, nM=4, window=2, nP=2, max_bytes=10)
    layer.initialize()
    for node in layer.walk():
        for name in node.param_names:
            node.set_param(name, node.get_param(name).astype("float64"))
    assert isinstance(layer.ops, NumpyOps)
    fused = layer.predict(docs)
    Y, backprop = layer(docs, is_train=True)
    backprop([numpy.ones_like(y) for y in Y])
    assert all(y.dtype == numpy.float64 for y in fused + Y)
    assert layer.get_grad("E").dtype == numpy.float64
    want = reference(layer, docs)[0].detach().numpy()
    assert_allclose(numpy.concatenate(fused), want, rtol=1e-12, atol=1e-12)


def test_a_numba_that_cannot_set_up_warns_and_thinc_predicts(docs, monkeypatch):
    """E.g. no writable cache folder: W002, and Thinc's code predicts and trains."""
    import builtins

    real_import = builtins.__import__

    def failing(name, globals=None, locals=None, fromlist=(), level=0):
        if level >= 1 and fromlist and "char_cnn_numba" in fromlist:
            raise RuntimeError("cannot cache function '_encode': no locator available")
        return real_import(name, globals, locals, fromlist, level)

    layer = build_char_cnn(width=5, nM=4, window=1, nP=3, max_bytes=10)
    layer.initialize()
    char_cnn._numba_module.cache_clear()
    monkeypatch.setattr(builtins, "__import__", failing)
    try:
        with pytest.warns(UserWarning, match=r"\[W002\] Numba could not set up the character CNN's CPU loops"):
            Y = layer.predict(docs)
        assert_allclose(numpy.concatenate(Y), reference(layer, docs)[0].detach().numpy(), rtol=1e-5, atol=1e-6)
        Y, backprop = layer(docs, is_train=True)
        assert backprop(Y) == [] and layer.get_grad("E") is not None
    finally:
        monkeypatch.undo()
        char_cnn._numba_module.cache_clear()


def test_word_symbols_are_the_distinct_words_between_markers(docs):
    symbols, lengths, inverse = word_symbols(docs[:2], max_bytes=4)
    words = sorted({t.orth for d in docs[:2] for t in d})
    assert len(lengths) == len(words) and len(inverse) == 8
    assert lengths.sum() == len(symbols)
    starts = numpy.cumsum(lengths) - lengths
    first = [symbols[s : s + n].tolist() for s, n in zip(starts, lengths)]
    texts = [docs[0].vocab.strings[w] for w in words]
    assert first[texts.index("green")] == [WORD_START, *b"gren", WORD_END]  # "gr" + "en"
    assert first[texts.index("a")] == [WORD_START, ord("a"), WORD_END]
    empty = word_symbols([docs[2]], 4)
    assert [len(a) for a in empty] == [0, 0, 0]
    assert [len(a) for a in word_symbols([], 4)] == [0, 0, 0]


def test_char_cnn_on_no_tokens(docs):
    layer = build_char_cnn(width=3, nM=2)
    layer.initialize()
    Y, backprop = layer([docs[2], docs[2]], is_train=True)
    assert [y.shape for y in Y] == [(0, 3), (0, 3)]
    assert backprop(Y) == []
    assert layer([], is_train=False)[0] == []


def test_char_cnn_rejects_too_few_bytes():
    with pytest.raises(ValueError, match="max_bytes"):
        build_char_cnn(max_bytes=1)


def make_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {**SMALL_MODEL, "tok2vec": EMBED}})
    return nlp


def test_overfitting_io_with_the_char_cnn(tmp_path):
    nlp = make_nlp()
    examples = make_examples(nlp)
    losses = train(nlp, examples, steps=150)
    assert losses["crf_tagger"] < 1.0  # summed over 8 tokens; ~9 at the start
    # "eggs" (the CNN reads its bytes) is still tagged N in new contexts
    assert [t.tag_ for t in nlp("I like eggs")] == ["N", "V", "N"]
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    assert tags_of(loaded, TEST_TEXTS) == tags_of(nlp, TEST_TEXTS)
    assert_same_weights(nlp.get_pipe("crf_tagger"), loaded.get_pipe("crf_tagger"))
    assert [[t.tag_ for t in d] for d in loaded.pipe(TEST_TEXTS, batch_size=2)] == tags_of(loaded, TEST_TEXTS)
    assert any(node.name == "char_cnn" for node in loaded.get_pipe("crf_tagger").model.walk())


def test_v5_and_v4_without_a_word_encoder_are_v3():
    """HashCharEmbed.v5 with sum_byte_gradients (and the legacy v4) without a
    word encoder build v3's layers."""
    nlp = spacy.blank("en")
    v3 = {k: v for k, v in EMBED.items() if k not in ("word_encoder", "sum_byte_gradients")}
    v3["@architectures"] = "spacy_crf.HashCharEmbed.v3"
    v4 = {**v3, "@architectures": "spacy_crf.HashCharEmbed.v4", "word_encoder": None}
    models = []
    for embed in ({**EMBED, "word_encoder": None}, v4, v3):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"model": {**SMALL_MODEL, "tok2vec": embed}})
        nlp.initialize(lambda nlp=nlp: make_examples(nlp))
        models.append([n.name for n in nlp.get_pipe("crf_tagger").model.walk()])
    assert models[0] == models[1] == models[2]


@pytest.mark.gpu
def test_char_cnn_on_gpu_equals_cpu(docs):
    from thinc.api import use_ops

    cpu = build_char_cnn(width=5, nM=4, window=1, nP=3, max_bytes=10)
    cpu.initialize()
    Y, backprop = cpu(docs, is_train=True)
    dY = [numpy.random.default_rng(1).standard_normal(y.shape).astype("f") for y in Y]
    backprop(dY)
    with use_ops("cupy"):
        gpu = build_char_cnn(width=5, nM=4, window=1, nP=3, max_bytes=10)
        gpu.initialize()
        for a, b in zip(cpu.walk(), gpu.walk()):
            for name in a.param_names:
                b.set_param(name, b.ops.asarray(a.get_param(name)))
        Y_gpu, backprop_gpu = gpu(docs, is_train=True)
        backprop_gpu([gpu.ops.asarray(d) for d in dY])
    assert_allclose(numpy.concatenate([y.get() for y in Y_gpu]), numpy.concatenate(Y), rtol=1e-5, atol=1e-6)
    assert_allclose(gpu.get_grad("E").get(), cpu.get_grad("E"), rtol=1e-4, atol=1e-5)
    conv_cpu, conv_gpu = cpu.layers[0], gpu.layers[0]
    assert_allclose(conv_gpu.get_grad("W").get(), conv_cpu.get_grad("W"), rtol=1e-4, atol=1e-5)
