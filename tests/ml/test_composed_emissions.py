"""spacy_crf.BiLSTMCRF.v3 emissions = "composed": each label's score is the sum
of its parts' scores plus its bias (equal to a full linear layer whose label
weights are those sums, outputs and gradients), the labels' parts per target,
the overfitting-IO test of crf_morphologizer with weights-equal round trips, the inference copies,
and the coded errors."""

import pytest
import spacy
import srsly
import torch
from spacy.training import Example
from thinc.api import fix_random_seed
from torch import nn

from spacy_crf.ml import crf_shim, torch_network
from spacy_crf.nn import BiLSTMCRF
from spacy_crf.nn.emissions import ComposedEmission
from spacy_crf.nn.quantize import available as int8_available
from spacy_crf.nn.quantize import bf16_copy, int8_copy
from spacy_crf.targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget, label_parts

from ..components.test_morphologizer import (
    TEST_TEXTS,
    analyses,
    assert_pos_morph_overfits_and_round_trips,
    morph_examples,
)
from ..components.test_tagger import JOINT_DATA
from ..helpers import (
    MORPH_SENTENCES,
    SMALL_MODEL,
    TRAIN_DATA,
    make_examples,
    make_nlp,
    train,
)

COMPOSED = {
    **SMALL_MODEL,
    "@architectures": "spacy_crf.BiLSTMCRF.v3",
    "transitions": "factored",
    "emissions": "composed",
}
PARTS = [[0, 2], [1], [], [0, 1, 3], [3]]


def test_composed_emission_is_a_linear_layer_of_summed_part_weights():
    torch.manual_seed(0)
    layer = ComposedEmission(6, PARTS).double()
    torch.nn.init.normal_(layer.bias)
    hidden = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    # the same scores from a full layer: label k's weights are its parts' sum
    W = layer.parts.weight.detach().clone().requires_grad_(True)  # shape: (P, width)
    b = layer.bias.detach().clone().requires_grad_(True)
    full = torch.stack([W[parts].sum(0) if parts else W.new_zeros(6) for parts in PARTS])  # shape: (K, width)
    want = hidden @ full.T + b
    got = layer(hidden)
    assert got.shape == (2, 3, len(PARTS))
    assert torch.allclose(got, want, atol=1e-12)
    assert torch.allclose(got[..., 2], layer.bias[2].expand(2, 3))  # no parts: its bias
    d = torch.randn_like(got)
    (got * d).sum().backward()
    hidden_grad = hidden.grad.clone()
    hidden.grad = None
    (want * d).sum().backward()
    assert torch.allclose(hidden_grad, hidden.grad, atol=1e-12)
    assert torch.allclose(layer.parts.weight.grad, W.grad, atol=1e-12)
    assert torch.allclose(layer.bias.grad, b.grad, atol=1e-12)


@pytest.mark.parametrize("shape", [(6,), (0, 6), (4, 6), (2, 3, 6), (2, 0, 6), (2, 2, 3, 6)])
def test_composed_emission_takes_any_leading_shape(shape):
    """Hidden states of any leading shape, empty ones included, score as the
    sum of the parts' scores through the composition plus the bias."""
    torch.manual_seed(0)
    layer = ComposedEmission(6, PARTS).double()
    torch.nn.init.normal_(layer.bias)
    hidden = torch.randn(*shape, dtype=torch.float64)
    got = layer(hidden)
    assert got.shape == (*shape[:-1], len(PARTS))
    assert torch.allclose(got, layer.parts(hidden) @ layer.composition + layer.bias, atol=1e-12)


@pytest.mark.parametrize("parts", [[], [[], []], [[0], [-1]]])
def test_composed_emission_needs_parts(parts):
    with pytest.raises(ValueError, match="part"):
        ComposedEmission(4, parts)


def test_network_with_composed_emissions():
    torch.manual_seed(0)
    network = BiLSTMCRF(5, len(PARTS), hidden_width=3, emissions="composed", parts=PARTS)
    assert isinstance(network.emission, ComposedEmission)
    inputs = torch.randn(3, 4, 5)
    lengths = torch.tensor([4, 1, 0])
    scores = network(inputs, lengths)
    assert scores.emissions.shape == (3, 4, len(PARTS))
    # the bucketed and the packed BiLSTM give the same emissions
    network.lstm_runs = "packed"
    packed = network(inputs, lengths)
    mask = scores.mask
    assert torch.allclose(scores.emissions[mask], packed.emissions[mask], atol=1e-5)
    names = set(network.state_dict())
    assert {"emission.parts.weight", "emission.bias"} <= names and "emission.composition" not in names
    with pytest.raises(ValueError, match="part ids"):
        BiLSTMCRF(5, len(PARTS), emissions="composed")
    with pytest.raises(ValueError, match="emissions"):
        BiLSTMCRF(5, len(PARTS), emissions="sparse")


def test_inference_copies_of_composed_emissions():
    torch.manual_seed(0)
    network = BiLSTMCRF(5, len(PARTS), hidden_width=8, emissions="composed", parts=PARTS).eval()
    inputs, lengths = torch.randn(2, 6, 5), torch.tensor([6, 3])
    with torch.no_grad():
        want = network(inputs, lengths).emissions
        bf16 = bf16_copy(network)(inputs, lengths).emissions
        assert bf16.dtype == torch.float32
        assert torch.allclose(bf16, want, atol=0.1)
        if int8_available():
            int8 = int8_copy(network)
            assert isinstance(int8.emission, ComposedEmission)
            assert type(int8.emission.parts) is not nn.Linear and "quantized" in type(int8.emission.parts).__module__
            assert torch.allclose(int8(inputs, lengths).emissions, want, atol=0.1)


def test_label_parts_per_target():
    labels = ["Case=Nom|Number=Plur|POS=NOUN", "POS=PUNCT", "Number=Plur|POS=VERB"]
    names = ["Case=Nom", "Number=Plur", "POS=NOUN", "POS=PUNCT", "POS=VERB"]
    assert label_parts(MORPH_TARGETS["pos+morph"], labels) == [[0, 1, 2], [3], [1, 4]]
    assert label_parts(MORPH_TARGETS["morph"], ["Case=Nom|Number=Plur", "_", "Number=Sing"]) == [[0, 1], [], [2]]
    assert label_parts(TOKEN_TARGETS["tag+pos"], ["NNS|NOUN", "NN|NOUN", "VB|VERB"]) == [
        [3, 0],
        [2, 0],
        [4, 1],
    ]  # POS=NOUN, POS=VERB, TAG=NN, TAG=NNS, TAG=VB
    ids = label_parts(MORPH_TARGETS["pos+morph"], labels)
    assert [sorted(names[i] for i in label) for label in ids] == [sorted(label.split("|")) for label in labels]
    assert label_parts(TOKEN_TARGETS["tag"], ["NN", "VB"]) is None
    assert label_parts(EntityTarget("BILUO"), ["B-PER", "O"]) is None


@pytest.fixture(scope="module")
def trained():
    fix_random_seed(0)
    nlp = make_nlp(model=COMPOSED, factory="crf_morphologizer")
    losses = train(nlp, morph_examples(nlp), steps=100)
    return nlp, losses


def test_overfitting_IO(trained, tmp_path):
    nlp, losses = trained
    assert_pos_morph_overfits_and_round_trips(nlp, losses, COMPOSED, tmp_path)


def assert_parts_are_the_labels_upos_and_features(tagger):
    emission = torch_network(tagger.model).emission
    assert isinstance(emission, ComposedEmission)
    names = sorted({part for label in tagger.labels for part in label.split("|")})
    composition = emission.composition.T  # shape: (K, P)
    assert composition.shape == (len(tagger.labels), len(names))
    for label, row in zip(tagger.labels, composition):
        assert sorted(names[i] for i in row.nonzero().flatten().tolist()) == sorted(label.split("|"))


def test_the_parts_are_the_labels_upos_and_features(trained, tmp_path):
    nlp, _ = trained
    assert_parts_are_the_labels_upos_and_features(nlp.get_pipe("crf_morphologizer"))
    nlp.to_disk(tmp_path)
    assert_parts_are_the_labels_upos_and_features(spacy.load(tmp_path).get_pipe("crf_morphologizer"))


def test_parts_follow_labels_given_in_any_order():
    nlp = make_nlp(model=COMPOSED, factory="crf_morphologizer")
    examples = morph_examples(nlp)
    found = sorted(
        {f"{m}|POS={p}" if m else f"POS={p}" for _, pos, morphs in MORPH_SENTENCES for p, m in zip(pos, morphs)}
    )
    labels = [MORPH_TARGETS["pos+morph"].expand_label(label)[0] for label in reversed(found)]
    nlp.get_pipe("crf_morphologizer").initialize(lambda: examples, nlp=nlp, labels=labels)
    tagger = nlp.get_pipe("crf_morphologizer")
    assert list(tagger.labels) == labels and labels != sorted(labels)
    assert_parts_are_the_labels_upos_and_features(tagger)


@pytest.mark.parametrize(
    "factory,target,data", [("crf_morphologizer", "morph", "morph"), ("crf_tagger", "tag+pos", "joint")]
)
def test_composed_emissions_train_other_targets(factory, target, data):
    fix_random_seed(0)
    nlp = make_nlp(model={**COMPOSED, "transitions": "full"}, factory=factory, target=target)
    if data == "morph":
        examples = morph_examples(nlp)
        # the punctuation's morph is unset in the gold: unknown, not scored
        want = lambda doc: [str(t.morph) for t in doc if t.pos_ != "PUNCT" and not t.is_punct]  # noqa: E731
        gold = [[m for m in morphs if m] for _, _, morphs in MORPH_SENTENCES]
    else:
        examples = make_examples(nlp, JOINT_DATA)
        want = lambda doc: [(t.tag_, t.pos_) for t in doc]  # noqa: E731
        gold = [list(zip(annot["tags"], annot["pos"])) for _, annot in JOINT_DATA]
    losses = train(nlp, examples, steps=150)
    assert losses[factory] < 1.5
    assert isinstance(torch_network(nlp.get_pipe(factory).model).emission, ComposedEmission)
    assert [want(doc) for doc in nlp.pipe(eg.x.text for eg in examples)] == gold


def test_a_morph_target_whose_labels_have_no_parts_is_refused():
    nlp = make_nlp(model={**COMPOSED, "transitions": "full"}, factory="crf_morphologizer", target="morph")
    examples = [Example.from_dict(nlp.make_doc("a b"), {"morphs": ["_", "_"]})]
    with pytest.raises(ValueError, match=r"\[E029\]"):
        nlp.initialize(get_examples=lambda: examples)


@pytest.mark.parametrize("mode", ["int8", "bf16"])
def test_the_quantize_setting_on_a_composed_pipeline(trained, mode):
    if mode == "int8" and not int8_available():
        pytest.skip("this torch has no dynamic quantization")
    nlp, _ = trained
    expected = [analyses(doc) for doc in map(nlp, TEST_TEXTS)]
    tagger = nlp.get_pipe("crf_morphologizer")
    tagger.quantize = mode
    try:
        got = [analyses(doc) for doc in map(nlp, TEST_TEXTS)]
    finally:
        tagger.quantize = "none"
    same = sum(a == b for doc_a, doc_b in zip(got, expected) for a, b in zip(doc_a, doc_b))
    assert same >= 0.9 * sum(len(doc) for doc in expected)


def test_a_target_without_parts_is_refused():
    nlp = make_nlp(model={**COMPOSED, "transitions": "full"}, target="tag")
    with pytest.raises(ValueError, match=r"\[E029\]"):
        nlp.initialize(get_examples=lambda: make_examples(nlp, TRAIN_DATA))


def test_unknown_emissions_are_refused():
    with pytest.raises(ValueError, match=r"\[E028\]"):
        make_nlp(model={**COMPOSED, "emissions": "sparse"}, factory="crf_morphologizer")


def test_full_and_composed_files_do_not_mix(trained):
    nlp, _ = trained
    full = make_nlp(model={**COMPOSED, "emissions": "full"}, factory="crf_morphologizer")
    with pytest.raises(ValueError, match="emissions"):
        full.from_bytes(nlp.to_bytes())
    fix_random_seed(0)
    full = make_nlp(model={**COMPOSED, "emissions": "full"}, factory="crf_morphologizer")
    full.initialize(get_examples=lambda: morph_examples(full))
    with pytest.raises(ValueError, match="emissions"):
        make_nlp(model=COMPOSED, factory="crf_morphologizer").from_bytes(full.to_bytes())


def test_a_file_saved_before_emissions_existed(trained):
    """Files saved before .v3 have no "emissions": they were made with full
    emissions, load into a .v2 config and are refused by a composed one."""
    fix_random_seed(0)
    v2 = {**COMPOSED, "@architectures": "spacy_crf.BiLSTMCRF.v2"}
    del v2["emissions"]
    nlp = make_nlp(model=v2, factory="crf_morphologizer")
    nlp.initialize(get_examples=lambda: morph_examples(nlp))
    shim = crf_shim(nlp.get_pipe("crf_morphologizer").model)
    msg = srsly.msgpack_loads(shim.to_bytes())
    del msg["config"]["network"]["emissions"]
    old = srsly.msgpack_dumps(msg)
    again = make_nlp(model=v2, factory="crf_morphologizer")
    again.initialize(get_examples=lambda: morph_examples(again))
    again_shim = crf_shim(again.get_pipe("crf_morphologizer").model)
    again_shim.from_bytes(old)
    for a, b in zip(shim.network.state_dict().values(), again_shim.network.state_dict().values()):
        assert torch.equal(a, b)
    composed = make_nlp(model=COMPOSED, factory="crf_morphologizer")
    composed.initialize(get_examples=lambda: morph_examples(composed))
    composed_shim = crf_shim(composed.get_pipe("crf_morphologizer").model)
    with pytest.raises(ValueError, match="emissions is 'full' in the file, 'composed' in the config"):
        composed_shim.from_bytes(old)


def test_v2_is_v3_with_full_emissions():
    structures = []
    for model in (
        {**COMPOSED, "@architectures": "spacy_crf.BiLSTMCRF.v2", "emissions": None},
        {**COMPOSED, "emissions": "full"},
    ):
        model = {k: v for k, v in model.items() if v is not None}
        nlp = make_nlp(model=model, factory="crf_morphologizer")
        nlp.initialize(get_examples=lambda nlp=nlp: morph_examples(nlp))
        network = torch_network(nlp.get_pipe("crf_morphologizer").model)
        structures.append([(name, tuple(p.shape)) for name, p in network.named_parameters()])
        assert isinstance(network.emission, nn.Linear)
    assert structures[0] == structures[1]


@pytest.mark.gpu
def test_overfitting_IO_on_gpu(tmp_path):
    """Trained on a GPU (CupyOps, CUDA torch): the composed layer's gradients
    reach its parts' weights there as on the CPU, and the pipeline round-trips."""
    from thinc.api import require_gpu

    pytest.importorskip("cupy")
    require_gpu()  # conftest's thinc_ops_restored puts the CPU ops back afterwards
    fix_random_seed(0)
    nlp = make_nlp(model=COMPOSED, factory="crf_morphologizer")
    losses = train(nlp, morph_examples(nlp), steps=100)
    network = torch_network(nlp.get_pipe("crf_morphologizer").model)
    assert next(network.parameters()).is_cuda
    assert_pos_morph_overfits_and_round_trips(nlp, losses, COMPOSED, tmp_path)
