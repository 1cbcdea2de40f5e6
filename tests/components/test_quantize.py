"""quantize = "int8" and "bf16": CPU prediction through an int8 (bfloat16)
copy of the network, remade whenever the weights change; training and saving
stay float32."""

import pytest
import spacy
import torch

from spacy_crf.ml import crf_shim
from spacy_crf.nn import quantize as quantization

from ..helpers import (
    SMALL_MODEL,
    TRAIN_DATA,
    assert_same_weights,
    make_examples,
    make_nlp,
    tags_of,
    train,
)

needs_int8 = pytest.mark.skipif(not quantization.available(), reason="this torch has no dynamic quantization")
MODES = [pytest.param("int8", marks=needs_int8), "bf16"]

TEXTS = [text for text, _ in TRAIN_DATA]


def emissions(nlp):
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in TEXTS]
    return tagger.model.predict(docs).scores.emissions.detach().clone()


def float32_emissions(nlp):
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    mode = shim.quantize
    shim.set_quantize("none")
    try:
        return emissions(nlp)
    finally:
        shim.set_quantize(mode)


def assert_close_to_float32(nlp):
    reduced, exact = emissions(nlp), float32_emissions(nlp)
    assert reduced.dtype == torch.float32
    assert not torch.equal(reduced, exact)  # the copy did run
    assert torch.allclose(reduced, exact, atol=0.05 * float(exact.abs().max()) + 1e-3)


def copy_has_run_in(shim, mode):
    lstm = shim._inference_copy.lstm
    if mode == "int8":
        return isinstance(lstm, torch.ao.nn.quantized.dynamic.LSTM)
    copy = shim._inference_copy
    weights = [*lstm.parameters(), *copy.emission.parameters()]
    return all(p.dtype == torch.bfloat16 for p in weights) and copy.compute_dtype == torch.bfloat16


@pytest.mark.parametrize("mode", MODES)
def test_overfits_and_predicts_through_a_reduced_copy(mode):
    nlp = make_nlp(quantize=mode)
    train(nlp, make_examples(nlp))
    gold = [[t.tag_ for t in example.reference] for example in make_examples(nlp)]
    assert tags_of(nlp, TEXTS) == gold
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    assert copy_has_run_in(shim, mode)
    assert type(shim.network.lstm) is torch.nn.LSTM  # the network itself is untouched
    assert all(p.dtype == torch.float32 for p in shim.network.parameters())
    assert shim.network.compute_dtype is None
    assert_close_to_float32(nlp)


@pytest.mark.parametrize("mode", MODES)
def test_the_copy_follows_every_change_of_the_weights(mode):
    from thinc.api import Adam

    nlp = make_nlp(quantize=mode)
    examples = make_examples(nlp)
    optimizer = nlp.initialize(get_examples=lambda: examples, sgd=Adam(0.001, use_averages=True))
    before = emissions(nlp)
    nlp.update(examples, sgd=optimizer)
    assert not torch.allclose(emissions(nlp), before)  # an update remakes it
    assert_close_to_float32(nlp)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    trained = emissions(nlp)  # a copy of the trained weights
    assert optimizer.averages  # so that use_params below swaps weights
    with nlp.use_params(optimizer.averages):  # averaged weights, as spacy train evaluates
        assert shim._inference_copy is None  # the averages get a copy of their own
        averaged = emissions(nlp)
        assert not torch.allclose(averaged, trained)
        assert_close_to_float32(nlp)
    assert shim._inference_copy is None  # and the trained weights again after
    assert torch.equal(emissions(nlp), trained)
    assert_close_to_float32(nlp)


@pytest.mark.parametrize("mode", MODES)
def test_saves_float32_weights_and_keeps_the_setting(tmp_path, mode):
    nlp = make_nlp(quantize=mode)
    train(nlp, make_examples(nlp), steps=10)
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    assert loaded.get_pipe("crf_tagger").quantize == mode
    assert_same_weights(nlp.get_pipe("crf_tagger"), loaded.get_pipe("crf_tagger"))
    assert tags_of(loaded, TEXTS) == tags_of(nlp, TEXTS)
    # the same file, loaded without quantization, runs the float32 network
    plain = spacy.load(tmp_path, config={"components": {"crf_tagger": {"quantize": "none"}}})
    assert torch.equal(emissions(plain), float32_emissions(nlp))


def test_unknown_mode_is_a_coded_error():
    with pytest.raises(ValueError, match=r"\[E039\].*quantize"):
        make_nlp(quantize="int4")


def test_a_torch_without_dynamic_quantization_is_a_coded_error(monkeypatch):
    monkeypatch.setattr(quantization, "available", lambda: False)
    with pytest.raises(ValueError, match="E027"):
        make_nlp(quantize="int8")
    make_nlp()  # the default needs nothing
    make_nlp(quantize="bf16")  # nor does bfloat16


def test_factory_default_is_float32():
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    assert tagger.quantize == "none" and nlp.config["components"]["crf_tagger"]["quantize"] == "none"


@pytest.mark.parametrize("mode", MODES)
def test_the_setting_can_change_on_a_built_component(mode):
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=10)
    tagger = nlp.get_pipe("crf_tagger")
    exact = emissions(nlp)
    tagger.quantize = mode
    assert not torch.equal(emissions(nlp), exact)
    tagger.quantize = "none"
    assert torch.equal(emissions(nlp), exact)
    with pytest.raises(ValueError, match=r"\[E039\].*quantize"):
        tagger.quantize = "fp8"


def test_bf16_copy_of_a_network_without_lstm():
    from spacy_crf.nn import BiLSTMCRF

    torch.manual_seed(0)
    network = BiLSTMCRF(6, 4, depth=0).eval()
    copy = quantization.bf16_copy(network)
    inputs, lengths = torch.randn(2, 3, 6), torch.tensor([3, 1])
    assert copy.lstm is None and copy.compute_dtype == torch.bfloat16 and network.compute_dtype is None
    reduced, exact = copy(inputs, lengths).emissions, network(inputs, lengths).emissions
    assert reduced.dtype == torch.float32 and torch.allclose(reduced, exact, atol=0.05)
    empty = copy(inputs[:0], lengths[:0]).emissions
    assert empty.shape == (0, 3, 4) and empty.dtype == torch.float32


def test_bf16_copy_scores_padded_batches_like_float32():
    """Rows of every length, 0 and 1 included, in one padded batch."""
    from spacy_crf.nn import BiLSTMCRF

    torch.manual_seed(0)
    network = BiLSTMCRF(6, 4, hidden_width=8).eval()
    copy = quantization.bf16_copy(network)
    inputs, lengths = torch.randn(4, 5, 6), torch.tensor([5, 0, 1, 3])
    exact, reduced = network(inputs, lengths), copy(inputs, lengths)
    assert reduced.emissions.dtype == torch.float32
    assert torch.equal(reduced.mask, exact.mask)
    assert torch.allclose(reduced.emissions, exact.emissions, atol=0.05)
    padding = ~exact.mask
    assert torch.equal(reduced.emissions[padding] == 0, exact.emissions[padding] == 0)
    empty = copy(inputs[:0], lengths[:0]).emissions  # an empty batch
    assert empty.shape == (0, 5, 4) and empty.dtype == torch.float32
