"""The bucketed BiLSTM (oneDNN over length buckets, CPU) against torch's
nn.LSTM over packed rows: same outputs and gradients, any lengths and depth;
the buckets are the cheapest cut of the cost model; the network's two ways
give the same scores."""

import itertools

import numpy
import pytest
import torch
from torch.nn.utils.rnn import PackedSequence

from spacy_crf.nn import BiLSTMCRF, PackedScores, crf, quantize
from spacy_crf.nn.kernels import bucketed_lstm
from spacy_crf.nn.kernels.bucketed_lstm import bucketed_bilstm, buckets, runs_on
from spacy_crf.nn.packed import packing_rows, pad_tokens, token_starts


def cost(lengths, runs, step_cost, bucket_cost):
    return sum(lengths[start] * (step_cost + end - start) + bucket_cost for start, end in runs)


@pytest.mark.parametrize("lengths", [[9], [5, 5, 5], [40, 39, 12, 11, 11, 3, 1, 1], [30, 2, 2, 2, 2, 2, 2, 1]])
@pytest.mark.parametrize("step_cost,bucket_cost", [(2.0, 80.0), (1.0, 5.0), (0.0, 0.0)])
def test_buckets_are_the_cheapest_cut(lengths, step_cost, bucket_cost):
    runs = buckets(lengths, step_cost, bucket_cost)
    assert runs[0][0] == 0 and runs[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:])) and all(s < e for s, e in runs)
    every = []
    for cuts in itertools.product([False, True], repeat=len(lengths) - 1):
        points = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [len(lengths)]
        every.append(cost(lengths, list(zip(points, points[1:])), step_cost, bucket_cost))
    assert cost(lengths, runs, step_cost, bucket_cost) == pytest.approx(min(every))


def test_buckets_of_nothing():
    assert buckets([]) == []


def test_buckets_of_many_rows_are_cut_between_lengths_only():
    """Thousands of rows with few lengths (a batch of sentences): the cuts
    fall where the length changes, and no cut of those is cheaper."""
    rng = numpy.random.default_rng(0)
    lengths = sorted(rng.integers(1, 60, size=2500).tolist(), reverse=True)
    runs = buckets(lengths)
    assert runs[0][0] == 0 and runs[-1][1] == len(lengths)
    assert all(lengths[start - 1] != lengths[start] for start, _ in runs[1:])
    changes = [i for i in range(1, len(lengths)) if lengths[i] != lengths[i - 1]]
    best = cost(lengths, runs, 2.0, 80.0)
    for moved in changes[::7]:  # one more cut, or one fewer, at a length change
        cuts = sorted({start for start, _ in runs[1:]} ^ {moved})
        points = [0, *cuts, len(lengths)]
        assert cost(lengths, list(zip(points, points[1:])), 2.0, 80.0) >= best - 1e-6


def test_bucket_costs_must_not_be_negative():
    with pytest.raises(ValueError, match="must not be negative"):
        buckets([3, 3, 3], 2.0, -50.0)


def reference(lstm, inputs, lengths):
    B, T, _ = inputs.shape
    rows = packing_rows(lengths, T)
    data = inputs.reshape(B * T, -1).index_select(0, rows.flat)
    return lstm(PackedSequence(data, rows.batch_sizes, rows.sorted_indices, None))[0].data, rows


LENGTHS = [[1], [3, 1, 7, 7, 2, 5, 1], [12] * 4, [20, 1, 1, 1, 19, 2, 18, 3, 17]]


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_outputs_and_gradients_equal_the_packed_lstm(lengths, depth, dtype, tolerance):
    torch.manual_seed(len(lengths) + depth)
    lstm = torch.nn.LSTM(5, 4, num_layers=depth, bidirectional=True, batch_first=True).to(dtype)
    lengths = torch.tensor(lengths)
    inputs = torch.randn(len(lengths), int(lengths.max()) + 2, 5, dtype=dtype, requires_grad=True)
    expected, rows = reference(lstm, inputs, lengths)
    ours = bucketed_bilstm(lstm, inputs, lengths, rows)
    assert ours.shape == expected.shape and ours.dtype == dtype
    assert torch.allclose(ours, expected, atol=tolerance, rtol=0)
    weights = torch.randn_like(ours)
    wrt = [inputs, *lstm.parameters()]
    for a, b in zip(
        torch.autograd.grad((expected * weights).sum(), wrt), torch.autograd.grad((ours * weights).sum(), wrt)
    ):
        assert torch.allclose(a, b, atol=10 * tolerance, rtol=0)


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("bias", [True, False])
def test_a_head_gives_the_head_of_the_outputs(lengths, depth, bias):
    """With a linear head (prediction), the head of the packed LSTM's outputs,
    padded or unpadded inputs, with gradients to the inputs and every weight."""
    torch.manual_seed(len(lengths) + depth)
    lstm = torch.nn.LSTM(5, 4, num_layers=depth, bidirectional=True, batch_first=True).double()
    head = torch.nn.Linear(8, 3, bias=bias).double()
    lengths = torch.tensor(lengths)
    T = int(lengths.max())
    tokens = torch.randn(int(lengths.sum()), 5, dtype=torch.float64, requires_grad=True)
    starts = token_starts(tokens, lengths)[1]
    expected, rows = reference(lstm, pad_tokens(tokens, starts, lengths, T), lengths)
    expected = head(expected)
    wrt = [tokens, *lstm.parameters(), *head.parameters()]
    weights = torch.randn_like(expected)
    expected_grads = torch.autograd.grad((expected * weights).sum(), wrt)
    for padded in (True, False):
        tokens_in, starts = token_starts(tokens, lengths)
        if padded:
            ours = bucketed_bilstm(lstm, pad_tokens(tokens, starts, lengths, T), lengths, rows, head=head)
        else:
            ours = bucketed_bilstm(lstm, tokens_in, lengths, rows, starts, T, head=head)
        assert ours.shape == expected.shape and torch.allclose(ours, expected, atol=1e-12, rtol=0)
        for a, b in zip(expected_grads, torch.autograd.grad((ours * weights).sum(), wrt)):
            assert torch.allclose(a, b, atol=1e-11, rtol=0)


@pytest.mark.parametrize("emissions", ["full", "composed"])
def test_prediction_scores_as_training_without_dropout(emissions, monkeypatch):
    """The network in eval mode (its emission layer applied bucket by bucket)
    against train mode without dropout (applied to the whole outputs), float32
    as predicted: the same emissions and the same Viterbi paths."""
    torch.manual_seed(3)
    parts = [[0], [1], [0, 2], [1, 2], []] if emissions == "composed" else None
    network = BiLSTMCRF(6, 5, hidden_width=8, emissions=emissions, parts=parts)
    lengths = torch.tensor([4, 0, 1, 7, 3, 7, 2])
    tokens = torch.randn(int(lengths.sum()), 6)
    heads = []
    run = bucketed_lstm.bucketed_bilstm

    def spy(*args, head=None):
        heads.append(head)
        return run(*args, head=head)

    monkeypatch.setattr(bucketed_lstm, "bucketed_bilstm", spy)
    with torch.no_grad():
        network.train()
        expected = network(tokens, lengths, packed=True)
        network.eval()
        ours = network(tokens, lengths, packed=True)
    linear = network.emission.parts if emissions == "composed" else network.emission
    assert heads[0] is None and heads[1] is linear  # train mode: whole outputs; eval: the head
    assert torch.allclose(ours.data, expected.data, atol=1e-5, rtol=0)
    assert torch.equal(crf.viterbi_decode(ours.padded())[0], crf.viterbi_decode(expected.padded())[0])


def test_every_bucket_cut_gives_the_same_outputs(monkeypatch):
    """From one bucket a row to one bucket for all: the same outputs."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(3, 2, bidirectional=True, batch_first=True).double()
    lengths = torch.tensor([6, 5, 5, 3, 1, 1])
    inputs = torch.randn(6, 6, 3, dtype=torch.float64)
    expected, rows = reference(lstm, inputs, lengths)
    for step_cost, bucket_cost in [(0.0, 0.0), (1000.0, 0.0), (0.0, 1000.0)]:
        monkeypatch.setattr(bucketed_lstm, "STEP_COST", step_cost)
        monkeypatch.setattr(bucketed_lstm, "BUCKET_COST", bucket_cost)
        assert torch.allclose(bucketed_bilstm(lstm, inputs, lengths, rows), expected, atol=1e-12)


def test_bfloat16_is_close_to_float32():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 6, bidirectional=True, batch_first=True)
    lengths = torch.tensor([9, 4, 1])
    inputs = torch.randn(3, 9, 8)
    expected, rows = reference(lstm, inputs, lengths)
    ours = bucketed_bilstm(lstm.to(torch.bfloat16), inputs.to(torch.bfloat16), lengths, rows)
    assert ours.dtype == torch.bfloat16 and torch.allclose(ours.float(), expected, atol=5e-2)


def test_dropout_between_layers_in_training():
    lstm = torch.nn.LSTM(4, 3, num_layers=2, dropout=0.5, bidirectional=True, batch_first=True).double()
    lengths = torch.tensor([5, 2])
    inputs = torch.randn(2, 5, 4, dtype=torch.float64)
    _, rows = reference(lstm, inputs, lengths)
    lstm.eval()
    assert torch.allclose(bucketed_bilstm(lstm, inputs, lengths, rows), reference(lstm, inputs, lengths)[0])
    lstm.train()
    torch.manual_seed(0)
    outputs = {tuple(bucketed_bilstm(lstm, inputs, lengths, rows).flatten().tolist()) for _ in range(3)}
    assert len(outputs) > 1  # dropout masks differ between calls


def test_runs_on_only_float_bidirectional_lstms_on_the_cpu():
    inputs = torch.zeros(1, 1, 4)
    assert runs_on(torch.nn.LSTM(4, 3, bidirectional=True, batch_first=True), inputs)
    assert not runs_on(torch.nn.LSTM(4, 3, batch_first=True), inputs)
    assert not runs_on(torch.nn.LSTM(4, 3, bidirectional=True), inputs)
    assert not runs_on(torch.nn.LSTM(4, 3, bidirectional=True, batch_first=True), inputs.long())
    int8 = quantize.inference_copy(BiLSTMCRF(4, 2, hidden_width=3), "int8")
    assert not runs_on(int8.lstm, inputs)  # the int8 copy runs packed
    assert runs_on(quantize.inference_copy(BiLSTMCRF(4, 2, hidden_width=3), "bf16").lstm, inputs.bfloat16())


@pytest.mark.parametrize("transitions", ["full", "factored"])
@pytest.mark.parametrize("train", [False, True])
def test_the_network_scores_alike_both_ways(transitions, train):
    """BiLSTMCRF with lstm_runs "auto" (bucketed on the CPU) and "packed":
    the same emissions, packed and padded, empty and one-token rows included,
    and the same gradients."""
    torch.manual_seed(1)
    classes = [0, 0, 1, 2, 2] if transitions == "factored" else None
    network = BiLSTMCRF(6, 5, hidden_width=4, depth=2, transitions=transitions, classes=classes).double()
    network.train(train)  # no dropout configured: both ways are deterministic
    lengths = torch.tensor([4, 0, 1, 7, 3])
    inputs = torch.randn(5, 7, 6, dtype=torch.float64, requires_grad=True)
    results = {}
    for runs in ("packed", "auto"):
        network.lstm_runs = runs
        padded = network(inputs, lengths)
        grads = torch.autograd.grad(padded.emissions[padded.mask].sum(), [inputs, *network.lstm.parameters()])
        with torch.no_grad():
            packed = network(inputs, lengths, packed=True)
        assert isinstance(packed, PackedScores)
        results[runs] = (padded.emissions.detach(), packed.data, grads)
    (a, pa, ga), (b, pb, gb) = results["packed"], results["auto"]
    assert torch.allclose(a, b, atol=1e-12) and torch.allclose(pa, pb, atol=1e-12)
    assert all(torch.allclose(x, y, atol=1e-12) for x, y in zip(ga, gb))


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("depth", [1, 2])
def test_tokens_without_padding_give_the_padded_outputs_and_gradients(lengths, depth):
    """The rows' tokens one after another (`starts`) against the same rows
    padded: equal outputs, and equal gradients for every token."""
    torch.manual_seed(len(lengths) + depth)
    lstm = torch.nn.LSTM(5, 4, num_layers=depth, bidirectional=True, batch_first=True).double()
    lengths = torch.tensor(lengths)
    T = int(lengths.max())
    tokens = torch.randn(int(lengths.sum()), 5, dtype=torch.float64, requires_grad=True)
    tokens_in, starts = token_starts(tokens, lengths)
    padded = pad_tokens(tokens, starts, lengths, T)
    rows = packing_rows(lengths, T)
    expected = bucketed_bilstm(lstm, padded, lengths, rows)
    ours = bucketed_bilstm(lstm, tokens_in, lengths, rows, starts, T)
    assert torch.allclose(ours, expected, atol=1e-12, rtol=0)
    weights = torch.randn_like(ours)
    wrt = [tokens, *lstm.parameters()]
    for a, b in zip(
        torch.autograd.grad((expected * weights).sum(), wrt), torch.autograd.grad((ours * weights).sum(), wrt)
    ):
        assert torch.allclose(a, b, atol=1e-11, rtol=0)


def test_token_layout_of_empty_rows():
    tokens = torch.arange(6, dtype=torch.float64).reshape(3, 2) + 1
    lengths = torch.tensor([0, 2, 0, 1])
    laid, starts = token_starts(tokens, lengths)
    assert laid.shape == (4, 2) and laid[3].abs().sum() == 0  # one zero token for the empty rows
    assert starts.tolist() == [3, 0, 3, 2]
    padded = pad_tokens(laid, starts, lengths, 2)
    assert padded.tolist() == [[[0, 0], [0, 0]], [[1, 2], [3, 4]], [[0, 0], [0, 0]], [[5, 6], [0, 0]]]
    assert token_starts(tokens, torch.tensor([1, 2]))[0] is tokens  # no empty row: no copy


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("runs", ["auto", "packed", "int8"])
def test_the_network_scores_tokens_as_it_scores_padded_rows(depth, runs):
    """BiLSTMCRF fed the tokens without padding: the same scores as fed the
    padded batch, packed and padded, with empty rows, every way the LSTM runs."""
    torch.manual_seed(depth)
    network = BiLSTMCRF(6, 5, hidden_width=4, depth=depth)
    if runs == "int8":
        network = quantize.inference_copy(network, "int8")
    else:
        network = network.double()
        network.lstm_runs = runs
    network.eval()
    dtype = torch.float32 if runs == "int8" else torch.float64
    lengths = torch.tensor([4, 0, 1, 7, 3])
    tokens = torch.randn(int(lengths.sum()), 6, dtype=dtype)
    padded = pad_tokens(*token_starts(tokens, lengths), lengths, 7)
    with torch.no_grad():
        for packed in (False, True):
            a, b = network(padded, lengths, packed=packed), network(tokens, lengths, packed=packed)
            assert type(a) is type(b) and torch.equal(a.mask, b.mask)
            a, b = (a.data, b.data) if packed and depth else (a.emissions, b.emissions)
            assert a.shape == b.shape and torch.allclose(a, b, atol=1e-6 if runs == "int8" else 1e-12)
        assert network(tokens[:0], lengths[:0]).emissions.shape[0] == 0


def test_tokens_need_their_rows_t_and_every_token():
    lstm = torch.nn.LSTM(3, 2, bidirectional=True, batch_first=True)
    lengths = torch.tensor([3, 1])
    tokens = torch.randn(4, 3)
    with pytest.raises(ValueError, match="needs the T"):
        bucketed_bilstm(lstm, tokens, lengths, packing_rows(lengths, 3), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="5 tokens for rows of 4"):
        BiLSTMCRF(3, 2, hidden_width=2)(torch.randn(5, 3), lengths)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("runs", ["auto", "packed"])
def test_the_network_trains_alike_on_tokens_and_padded_rows(depth, runs):
    """Training mode with dropout on the LSTM's outputs (and between its
    layers): the same seed gives the same emissions and the same gradients
    for every token and parameter, fed either way (input dropout, which draws
    one number per input cell, is off: its masks differ in number)."""
    network = BiLSTMCRF(6, 5, hidden_width=4, depth=depth, dropout=0.3).double()
    network.lstm_runs = runs
    network.train()
    lengths = torch.tensor([4, 0, 1, 7, 3])
    tokens = torch.randn(int(lengths.sum()), 6, dtype=torch.float64, requires_grad=True)
    results = []
    for feed in ("padded", "tokens"):
        torch.manual_seed(0)
        inputs = pad_tokens(*token_starts(tokens, lengths), lengths, 7) if feed == "padded" else tokens
        scores = network(inputs, lengths)
        weights = torch.arange(scores.emissions[scores.mask].numel(), dtype=torch.float64).reshape(-1, 5)
        loss = (scores.emissions[scores.mask] * weights).sum()
        wrt = [tokens, *network.parameters()]
        results.append((scores.emissions.detach(), torch.autograd.grad(loss, wrt, allow_unused=True)))
    (a, grads_a), (b, grads_b) = results
    assert torch.allclose(a, b, atol=1e-12)
    assert grads_a[0] is not None and grads_a[0].abs().sum() > 0
    for x, y in zip(grads_a, grads_b):  # the CRF's own parameters do not reach the emissions
        assert (x is None and y is None) or torch.allclose(x, y, atol=1e-10)
