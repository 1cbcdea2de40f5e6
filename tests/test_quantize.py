"""quantize = "int8": CPU prediction through an int8 copy of the network,
remade whenever the weights change; training and saving stay float32."""
import pytest
import spacy
import torch

from spacy_crf.ml import crf_shim
from spacy_crf.nn import quantize as quantization

from .helpers import SMALL_MODEL, TRAIN_DATA, assert_same_weights, make_examples, make_nlp, tags_of, train

pytestmark = pytest.mark.skipif(not quantization.available(), reason="this torch has no dynamic quantization")

TEXTS = [text for text, _ in TRAIN_DATA]


def emissions(nlp):
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in TEXTS]
    return tagger.model.predict(docs).scores.emissions.detach().clone()


def float32_emissions(nlp):
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    shim.set_quantize("none")
    try:
        return emissions(nlp)
    finally:
        shim.set_quantize("int8")


def assert_close_to_float32(nlp):
    int8, exact = emissions(nlp), float32_emissions(nlp)
    assert not torch.equal(int8, exact)  # the int8 copy did run
    assert torch.allclose(int8, exact, atol=0.05 * float(exact.abs().max()) + 1e-3)


def test_overfits_and_predicts_through_an_int8_copy():
    nlp = make_nlp(quantize="int8")
    train(nlp, make_examples(nlp))
    gold = [[t.tag_ for t in example.reference] for example in make_examples(nlp)]
    assert tags_of(nlp, TEXTS) == gold
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    assert isinstance(shim._inference_copy.lstm, torch.ao.nn.quantized.dynamic.LSTM)
    assert type(shim.network.lstm) is torch.nn.LSTM  # the network itself is untouched
    assert_close_to_float32(nlp)


def test_the_copy_follows_every_change_of_the_weights():
    nlp = make_nlp(quantize="int8")
    examples = make_examples(nlp)
    optimizer = nlp.initialize(get_examples=lambda: examples)
    before = emissions(nlp)
    nlp.update(examples, sgd=optimizer)
    assert not torch.allclose(emissions(nlp), before)  # an update remakes it
    assert_close_to_float32(nlp)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    with nlp.use_params(optimizer.averages):  # averaged weights, as spacy train evaluates
        assert_close_to_float32(nlp)
    assert_close_to_float32(nlp)  # and the trained weights after


def test_saves_float32_weights_and_keeps_the_setting(tmp_path):
    nlp = make_nlp(quantize="int8")
    train(nlp, make_examples(nlp), steps=10)
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    assert loaded.get_pipe("crf_tagger").quantize == "int8"
    assert_same_weights(nlp.get_pipe("crf_tagger"), loaded.get_pipe("crf_tagger"))
    assert tags_of(loaded, TEXTS) == tags_of(nlp, TEXTS)
    # the same file, loaded without quantization, runs the float32 network
    plain = spacy.load(tmp_path, config={"components": {"crf_tagger": {"quantize": "none"}}})
    assert torch.equal(emissions(plain), float32_emissions(nlp))


def test_unknown_mode_is_a_coded_error():
    with pytest.raises(ValueError, match="E026"):
        make_nlp(quantize="int4")


def test_a_torch_without_dynamic_quantization_is_a_coded_error(monkeypatch):
    monkeypatch.setattr(quantization, "available", lambda: False)
    with pytest.raises(ValueError, match="E027"):
        make_nlp(quantize="int8")
    make_nlp()  # the default needs nothing


def test_factory_default_is_float32():
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    assert tagger.quantize == "none" and nlp.config["components"]["crf_tagger"]["quantize"] == "none"


def test_the_setting_can_change_on_a_built_component():
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=10)
    tagger = nlp.get_pipe("crf_tagger")
    exact = emissions(nlp)
    tagger.quantize = "int8"
    assert not torch.equal(emissions(nlp), exact)
    tagger.quantize = "none"
    assert torch.equal(emissions(nlp), exact)
    with pytest.raises(ValueError, match="E026"):
        tagger.quantize = "fp8"
