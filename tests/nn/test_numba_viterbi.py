"""The Numba CPU Viterbi (spacy_crf.nn.kernels.numba_viterbi) against brute-force
enumeration and against the torch code on the same scores: full and
factored transitions, float32 and float64, lengths 0 and 1, padding,
constraints, ties, and what dispatch picks."""

import numpy
import pytest
import torch

from spacy_crf.nn import NEG_INF, crf, factored
from spacy_crf.nn.crf import CRFScores
from spacy_crf.nn.kernels import dispatch
from spacy_crf.nn.packed import PackedScores, packing_rows

from ..helpers import all_paths, brute_score
from .test_factored import CASES, factored_batch

numba_viterbi = pytest.importorskip("spacy_crf.nn.kernels.numba_viterbi", exc_type=ImportError)

FULL_CASES = [
    # seed, lengths, K
    (0, [1], 1),
    (1, [1], 3),
    (2, [5], 2),
    (3, [3, 1, 5, 2], 3),
    (4, [2, 0, 3], 4),
    (5, [4, 5, 3, 2, 1], 3),
    (6, [0, 0], 2),
    # eight predecessors a pass in the forward loop, and what is left over
    (7, [3, 1, 0, 2], 9),
    (8, [2, 3], 16),
]


def full_batch(seed, lengths, K, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    B, T = len(lengths), max(max(lengths), 1)
    return CRFScores(
        torch.randn(B, T, K, generator=gen, dtype=dtype) * 2,
        torch.arange(T) < torch.tensor(lengths)[:, None],
        torch.randn(K, K, generator=gen, dtype=dtype) * 1.5,
        torch.randn(K, generator=gen, dtype=dtype),
        torch.randn(K, generator=gen, dtype=dtype),
        None,
    )


def check_against_brute_force(scores, lengths, paths, best):
    K = scores.emissions.shape[2]
    assert paths.shape == scores.mask.shape and paths.dtype == torch.long
    for b, length in enumerate(lengths):
        if not length:
            assert float(best[b]) == 0.0
            continue
        expected = max(brute_score(scores, b, path) for path in all_paths(length, K))
        assert float(best[b]) == pytest.approx(expected, abs=1e-9)
        assert brute_score(scores, b, paths[b, :length].tolist()) == pytest.approx(expected, abs=1e-9)
        # padded steps repeat the last real label, as in the torch code
        assert (paths[b, length:] == paths[b, length - 1]).all()


@pytest.mark.parametrize("seed,lengths,K", FULL_CASES)
def test_full_viterbi_equals_brute_force_and_torch(seed, lengths, K):
    scores = full_batch(seed, lengths, K)
    paths, best = numba_viterbi.viterbi_decode(scores)
    check_against_brute_force(scores, lengths, paths, best)
    reference, reference_best = crf.viterbi_decode(scores)
    assert torch.equal(paths, reference)
    assert torch.allclose(best, reference_best, atol=1e-12)


@pytest.mark.parametrize("seed,lengths,classes", CASES)
def test_factored_viterbi_equals_brute_force_and_torch(seed, lengths, classes):
    scores, _ = factored_batch(seed, lengths, classes)
    paths, best = numba_viterbi.viterbi_decode(scores)
    check_against_brute_force(scores, lengths, paths, best)
    reference, reference_best = factored.viterbi_decode(scores)
    assert torch.equal(paths, reference)
    assert torch.allclose(best, reference_best, atol=1e-12)


@pytest.mark.parametrize("factor,K", [(False, 40), (False, 13), (False, 50), (True, 60)])
def test_float32_is_bit_for_bit_the_torch_code(factor, K):
    """Same float32 sums in the same order: the same paths and scores exactly."""
    gen = torch.Generator().manual_seed(11)
    if factor:
        classes = [int(c) for c in torch.randint(0, 7, (60,), generator=gen)]
        classes[:7] = range(7)
        scores, _ = factored_batch(12, [30, 1, 0, 17, 29], classes, dtype=torch.float32)
        reference = factored.viterbi_decode(scores)
    else:
        scores = full_batch(12, [30, 1, 0, 17, 29], K, dtype=torch.float32)
        reference = crf.viterbi_decode(scores)
    paths, best = numba_viterbi.viterbi_decode(scores)
    assert best.dtype == torch.float32
    assert torch.equal(paths, reference[0])
    assert torch.equal(best, reference[1])


@pytest.mark.parametrize("factor,K", [(False, 6), (False, 11), (False, 16), (True, 6)])
def test_ties_pick_the_torch_codes_labels(factor, K):
    """Integer scores make many paths tie: the first maximal label, as torch's argmax."""
    for seed in range(40):
        gen = torch.Generator().manual_seed(seed)
        lengths = [5, 0, 1, 3]
        emissions = torch.randint(-2, 3, (4, 5, K), generator=gen).float()
        mask = torch.arange(5) < torch.tensor(lengths)[:, None]
        start, end = torch.randint(-1, 2, (K,), generator=gen).float(), torch.zeros(K)
        if factor:
            classes = torch.tensor([0, 1, 1, 2, 0, 2])
            pair, leave, enter = (torch.randint(-1, 2, shape, generator=gen).float() for shape in [(3, 3), (K,), (K,)])
            scores = CRFScores(
                emissions, mask, factored.factored_transitions(pair, leave, enter, classes), start, end, classes
            )
            reference = factored.viterbi_decode(scores)
        else:
            transitions = torch.randint(-1, 2, (K, K), generator=gen).float()
            scores = CRFScores(emissions, mask, transitions, start, end, None)
            reference = crf.viterbi_decode(scores)
        paths, best = numba_viterbi.viterbi_decode(scores)
        assert torch.equal(paths, reference[0]), seed
        assert torch.equal(best, reference[1]), seed


def test_constraints_are_kept():
    """Forbidden moves (NEG_INF) are never taken where an allowed path exists."""
    scores = full_batch(3, [5, 4, 1], 3)
    allowed = torch.tensor([[True, True, False], [True, True, True], [False, True, True]])
    scores = scores._replace(transitions=scores.transitions.masked_fill(~allowed, NEG_INF))
    paths, best = numba_viterbi.viterbi_decode(scores)
    check_against_brute_force(scores, [5, 4, 1], paths, best)
    for row, length in zip(paths.tolist(), [5, 4, 1]):
        assert all(allowed[i, j] for i, j in zip(row[: length - 1], row[1:length]))


def test_empty_batch_and_no_steps():
    for B, T in [(0, 3), (2, 0), (0, 0)]:
        scores = CRFScores(
            torch.zeros(B, T, 3),
            torch.zeros(B, T, dtype=torch.bool),
            torch.zeros(3, 3),
            torch.zeros(3),
            torch.zeros(3),
            None,
        )
        paths, best = numba_viterbi.viterbi_decode(scores)
        assert paths.shape == (B, T) and best.shape == (B,)


def test_dispatch_decodes_cpu_batches_with_numba(monkeypatch):
    """auto (and numba) run the Numba Viterbi on the CPU, torch the torch code;
    the paths agree; SPACY_CRF_KERNELS=numba is accepted."""
    scores = full_batch(5, [4, 5, 3, 2, 1], 3, dtype=torch.float32)
    calls = []
    original = numba_viterbi.viterbi_decode
    monkeypatch.setattr(numba_viterbi, "viterbi_decode", lambda s: calls.append(1) or original(s))
    for mode in ("auto", "numba"):
        paths, _ = dispatch.viterbi_decode(scores, kernels=mode)
        assert torch.equal(paths, crf.viterbi_decode(scores)[0])
    assert len(calls) == 2
    dispatch.viterbi_decode(scores, kernels="torch")
    assert len(calls) == 2
    monkeypatch.setenv("SPACY_CRF_KERNELS", "numba")
    assert dispatch.kernel_mode() == "numba"
    dispatch.viterbi_decode(scores)
    assert len(calls) == 3


def test_without_numba_the_torch_code_decodes(monkeypatch):
    """Where Numba is not installed, auto falls back to the torch code."""
    monkeypatch.setattr(dispatch, "_numba_viterbi", lambda: None)
    scores = full_batch(5, [4, 5, 3, 2, 1], 3, dtype=torch.float32)
    assert not dispatch.use_numba(scores.emissions)
    paths, _ = dispatch.viterbi_decode(scores)
    assert torch.equal(paths, crf.viterbi_decode(scores)[0])


def packed_from(scores):
    """The PackedScores of padded scores, as the network packs them (every
    row at least one step)."""
    B, T, K = scores.emissions.shape
    rows = packing_rows(scores.mask.sum(1).clamp(min=1), T)
    data = scores.emissions.reshape(B * T, K).index_select(0, rows.flat)
    return PackedScores(data, rows, scores.mask, scores.transitions, scores.start, scores.end, scores.classes)


@pytest.mark.parametrize("factor", [False, True])
@pytest.mark.parametrize("case", range(7))
def test_packed_decoding_equals_padded_decoding_and_brute_force(factor, case):
    """Straight from packed emissions: the paths and scores of the padded
    scores, bit for bit, and the brute-force best paths."""
    if factor:
        seed, lengths, classes = CASES[case]
        scores, _ = factored_batch(seed, lengths, classes)
    else:
        seed, lengths, K = FULL_CASES[case]
        scores = full_batch(seed, lengths, K)
    packed = packed_from(scores)
    padded = packed.padded()
    paths, best = numba_viterbi.viterbi_decode_packed(packed)
    reference = numba_viterbi.viterbi_decode(padded)
    assert torch.equal(paths, reference[0]) and torch.equal(best, reference[1])
    check_against_brute_force(padded, lengths, paths, best)
    # through dispatch, with Numba and with torch's code (which pads first)
    for mode in ("auto", "torch"):
        via, via_best = dispatch.viterbi_decode_packed(packed, kernels=mode)
        assert torch.equal(via, paths) and torch.allclose(via_best, best, atol=1e-12)


def test_packed_decoding_in_float32_is_the_torch_codes():
    scores = full_batch(21, [30, 1, 0, 17, 29], 40, dtype=torch.float32)
    packed = packed_from(scores)
    paths, best = numba_viterbi.viterbi_decode_packed(packed)
    reference = crf.viterbi_decode(packed.padded())
    assert torch.equal(paths, reference[0]) and torch.equal(best, reference[1])


def test_the_component_predicts_packed_on_the_cpu_and_decodes_alike(monkeypatch):
    """model.predict on the CPU keeps the emissions packed; decoding them
    equals torch's decoding of the padded scores; every other method pads
    them once and works as before; training never packs."""
    from ..helpers import SMALL_MODEL, make_examples, make_nlp, train

    nlp = make_nlp(SMALL_MODEL)
    examples = make_examples(nlp)
    train(nlp, examples, steps=10)
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in ["I like green eggs", "Eat blue ham", "", "ham"]]
    batch = tagger.model.predict(docs)
    assert isinstance(batch.raw, PackedScores)
    assert batch.n_labels == len(tagger.labels)
    ids = batch.decode()
    assert isinstance(batch.raw, PackedScores)  # decoding did not pad
    monkeypatch.setenv("SPACY_CRF_KERNELS", "torch")
    assert all(a.tolist() == b.tolist() for a, b in zip(ids, tagger.model.predict(docs).decode()))
    monkeypatch.delenv("SPACY_CRF_KERNELS")
    marginals = batch.marginals()
    assert isinstance(batch.raw, CRFScores)  # padded once, then kept
    assert [m.shape[0] for m in marginals] == [len(doc) for doc in docs]
    assert all(numpy.allclose(m.sum(1), 1.0, atol=1e-5) for m in marginals)
    scores, _ = tagger.model.begin_update(docs)
    assert isinstance(scores.raw, CRFScores)


def test_factored_ties_by_rounding_go_back_as_the_torch_code():
    """Two labels of one class whose scores differ by one ulp tie once the
    class move is added in float32: torch's backtracking takes the first."""
    classes = torch.tensor([0, 0, 1])
    pair = torch.tensor([[0.0, 5.0], [0.0, -50.0]])
    transitions = factored.factored_transitions(pair, torch.zeros(3), torch.zeros(3), classes)
    first = torch.tensor(0.001)
    emissions = torch.tensor(
        [[[float(first), float(torch.nextafter(first, torch.tensor(1.0))), -50.0], [0.0, 0.0, 0.0]]]
    )
    scores = CRFScores(
        emissions, torch.ones(1, 2, dtype=torch.bool), transitions, torch.zeros(3), torch.zeros(3), classes
    )
    reference = factored.viterbi_decode(scores)
    assert reference[0].tolist() == [[0, 2]]
    for paths, best in (numba_viterbi.viterbi_decode(scores), numba_viterbi.viterbi_decode_packed(packed_from(scores))):
        assert torch.equal(paths, reference[0]) and torch.equal(best, reference[1])


@pytest.mark.parametrize("factor,K", [(False, 3), (False, 10), (True, 3)])
@pytest.mark.parametrize("bad", [float("nan"), float("-inf")])
def test_non_finite_scores_give_labels_in_range(factor, K, bad):
    if factor:
        scores, _ = factored_batch(3, [3, 1, 5, 2], [0, 1, 1])
    else:
        scores = full_batch(3, [3, 1, 5, 2], K)
    scores = scores._replace(emissions=torch.full_like(scores.emissions, bad))
    for paths, _ in (numba_viterbi.viterbi_decode(scores), numba_viterbi.viterbi_decode_packed(packed_from(scores))):
        assert ((paths >= 0) & (paths < K)).all()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_some_non_finite_scores_decode_as_the_torch_code_where_it_chooses_no_nan(bad):
    """A few NaN or +inf emissions among finite ones (K = 10: the forward
    loop's block of eight and the two left over): where torch's path has a
    finite score, the same path and score."""
    for seed in range(20):
        scores = full_batch(seed, [4, 6, 1], 10)
        gen = torch.Generator().manual_seed(100 + seed)
        spoilt = torch.rand(scores.emissions.shape, generator=gen) < 0.03
        scores = scores._replace(emissions=scores.emissions.masked_fill(spoilt, bad))
        paths, best = numba_viterbi.viterbi_decode(scores)
        assert ((paths >= 0) & (paths < 10)).all()
        reference, reference_best = crf.viterbi_decode(scores)
        for b in range(3):
            if torch.isfinite(reference_best[b]):
                assert torch.equal(paths[b], reference[b]), seed
                assert torch.equal(best[b], reference_best[b]), seed


@pytest.mark.parametrize("factor", [False, True])
def test_padding_beyond_the_longest_row(factor):
    """A batch padded further than its longest row (T = 7, rows of 3 and 1)."""
    if factor:
        scores, _ = factored_batch(8, [3, 1], [0, 1, 1])
    else:
        scores = full_batch(8, [3, 1], 3)
    B, T, K = scores.emissions.shape
    wide = torch.zeros(B, 7, K, dtype=scores.emissions.dtype)
    wide[:, :T] = scores.emissions
    scores = scores._replace(emissions=wide, mask=torch.arange(7) < torch.tensor([3, 1])[:, None])
    paths, best = numba_viterbi.viterbi_decode(scores)
    check_against_brute_force(scores, [3, 1], paths, best)
    reference = (factored if factor else crf).viterbi_decode(scores)
    assert torch.equal(paths, reference[0]) and torch.allclose(best, reference[1], atol=1e-12)


def test_a_numba_that_cannot_set_up_warns_and_torch_decodes(monkeypatch):
    """E.g. no writable cache folder: W001, and torch's code decodes."""
    import builtins

    from spacy_crf.nn.kernels import numba_viterbi as module

    real_import = builtins.__import__

    def failing(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 1 and fromlist and "numba_viterbi" in fromlist:
            raise RuntimeError("cannot cache function '_full': no locator available")
        return real_import(name, globals, locals, fromlist, level)

    dispatch._numba_viterbi.cache_clear()
    monkeypatch.setattr(builtins, "__import__", failing)
    try:
        with pytest.warns(UserWarning, match=r"\[W001\] Numba could not set up the CPU Viterbi"):
            assert dispatch._numba_viterbi() is None
        scores = full_batch(5, [4, 5, 3, 2, 1], 3, dtype=torch.float32)
        assert not dispatch.use_numba(scores.emissions)
        assert torch.equal(dispatch.viterbi_decode(scores)[0], crf.viterbi_decode(scores)[0])
    finally:
        monkeypatch.undo()
        dispatch._numba_viterbi.cache_clear()
    assert dispatch._numba_viterbi() is module


@pytest.mark.parametrize("factor", [False, True])
def test_near_ties_in_float32_decode_as_the_torch_code(factor):
    """Scores one or two ulps apart around a few values, so that many sums
    round to ties: the torch code's paths and scores, every time."""
    gen = torch.Generator().manual_seed(4)
    for _ in range(200):
        K, B, T = 7, 3, 5
        emissions = (
            torch.randint(-2, 3, (B, T, K), generator=gen).float() * 0.001
            + 0.001
            + torch.randint(0, 3, (B, T, K), generator=gen).float() * 1e-10
        )
        mask = torch.arange(T) < torch.randint(0, T + 1, (B,), generator=gen)[:, None]
        if factor:
            classes = torch.randint(0, 3, (K,), generator=gen)
            classes[:3] = torch.arange(3)
            pair = torch.randint(-3, 4, (3, 3), generator=gen).float() * 0.5
            leave, enter = (torch.randint(-1, 2, (K,), generator=gen).float() * 1e-3 for _ in range(2))
            scores = CRFScores(
                emissions,
                mask,
                factored.factored_transitions(pair, leave, enter, classes),
                torch.zeros(K),
                torch.zeros(K),
                classes,
            )
            reference = factored.viterbi_decode(scores)
        else:
            transitions = torch.randint(-3, 4, (K, K), generator=gen).float() * 0.5
            scores = CRFScores(emissions, mask, transitions, torch.zeros(K), torch.zeros(K), None)
            reference = crf.viterbi_decode(scores)
        paths, best = numba_viterbi.viterbi_decode(scores)
        assert torch.equal(paths, reference[0]) and torch.equal(best, reference[1])
