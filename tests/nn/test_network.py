"""The torch network: its own packing equals torch's, and padding changes nothing."""

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from spacy_crf.nn import CRFScores, PackedScores
from spacy_crf.nn.network import BiLSTMCRF, packing_rows


def _batch(lengths, width=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(lengths)
    T = int(lengths.max())
    inputs = torch.randn(len(lengths), T, width, generator=generator)
    inputs = inputs * (torch.arange(T)[None, :, None] < lengths[:, None, None])
    return inputs, lengths


@pytest.mark.parametrize("lengths", [[1], [3, 3, 3], [5, 1, 3, 5, 2], [2, 7, 7, 1, 4, 7, 3], [9, 1, 1]])
def test_packing_rows_match_torch(lengths):
    inputs, lengths = _batch(lengths)
    B, T, _ = inputs.shape
    ours = packing_rows(lengths, T)
    theirs = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    assert torch.equal(ours.batch_sizes, theirs.batch_sizes)
    assert torch.equal(inputs.reshape(B * T, -1)[ours.flat], theirs.data)
    assert len(ours.flat) == int(lengths.sum())


def _reference_emissions(network, inputs, lengths):
    """The same network run through torch's pack_padded / pad_packed."""
    packed = pack_padded_sequence(inputs, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
    output, _ = network.lstm(packed)
    hidden, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.shape[1])
    return network.emission(hidden)


@pytest.mark.parametrize("depth", [1, 2])
def test_emissions_and_gradients_match_torch_packing(depth):
    torch.manual_seed(0)
    network = BiLSTMCRF(6, 4, hidden_width=5, depth=depth).eval()
    inputs, lengths = _batch([4, 1, 6, 6, 2, 0, 3])
    inputs.requires_grad_(True)
    scores = network(inputs, lengths)
    mask = scores.mask
    reference = _reference_emissions(network, inputs, lengths)
    assert torch.allclose(scores.emissions[mask], reference[mask], atol=1e-6)
    weights = torch.randn(reference.shape) * mask[..., None]
    ours = torch.autograd.grad((scores.emissions * weights).sum(), inputs)[0]
    theirs = torch.autograd.grad((reference * weights).sum(), inputs)[0]
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_each_row_scores_as_if_alone():
    torch.manual_seed(1)
    network = BiLSTMCRF(6, 3, hidden_width=4).eval()
    inputs, lengths = _batch([3, 8, 1, 5])
    batched = network(inputs, lengths).emissions
    for row, n in enumerate(lengths.tolist()):
        alone = network(inputs[row : row + 1, :n], lengths[row : row + 1]).emissions
        assert torch.allclose(batched[row, :n], alone[0], atol=1e-6)


@pytest.mark.parametrize("transitions,constrained", [("full", False), ("full", True), ("factored", False)])
def test_packed_output_pads_to_the_padded_output(transitions, constrained):
    """packed=True (prediction) holds the same scores: padded() equals the
    padded output exactly, with empty and one-token rows, constraints and
    factored transitions."""
    torch.manual_seed(2)
    classes = [0, 1, 1, 0] if transitions == "factored" else None
    network = BiLSTMCRF(6, 4, hidden_width=5, transitions=transitions, classes=classes).eval()
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.normal_()
    if constrained:
        allowed = torch.rand(4, 4) > 0.3
        network.set_constraints(allowed, torch.tensor([True, True, False, True]), torch.ones(4, dtype=torch.bool))
    inputs, lengths = _batch([4, 1, 6, 0, 2, 6])
    with torch.no_grad():
        padded = network(inputs, lengths)
        packed = network(inputs, lengths, packed=True)
    assert isinstance(packed, PackedScores) and packed.data.shape == (int(lengths.clamp(min=1).sum()), 4)
    for ours, theirs in zip(packed.padded(), padded):
        assert (ours is None and theirs is None) or torch.equal(ours, theirs)
    assert (packed.classes is None) == (transitions == "full" or constrained)


def test_packed_is_not_built_without_a_bilstm_or_rows():
    with torch.no_grad():
        plain = BiLSTMCRF(6, 4, depth=0).eval()
        assert isinstance(plain(*_batch([3, 1]), packed=True), CRFScores)
        empty = BiLSTMCRF(6, 4, hidden_width=5).eval()
        assert isinstance(empty(torch.zeros(0, 1, 6), torch.zeros(0, dtype=torch.long), packed=True), CRFScores)
