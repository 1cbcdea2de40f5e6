"""Hard transition constraints: exact zero probability for invalid sequences."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_crf.nn import NEG_INF, CRFScores, marginals, viterbi_decode
from spacy_crf.targets.schemes import allowed_transitions

from ..helpers import (
    all_paths,
    brute_score,
    make_examples,
    make_nlp,
    random_batch,
    train,
    valid_reference,
)

BIO = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]
BILUO = ["B-PER", "I-PER", "L-PER", "O", "U-LOC", "U-PER"]
IOBES = ["B-X", "E-X", "I-X", "O", "S-X"]


@pytest.mark.parametrize("labels,scheme", [(BIO, "BIO"), (BIO, "IOB2"), (BILUO, "BILUO"), (IOBES, "IOBES")])
def test_masks_allow_exactly_the_valid_sequences(labels, scheme):
    trans, start, end = allowed_transitions(labels, scheme)
    for length in range(1, 5):
        for seq in itertools.product(range(len(labels)), repeat=length):
            ok = start[seq[0]] and end[seq[-1]] and all(trans[a, b] for a, b in zip(seq, seq[1:]))
            assert ok == valid_reference([labels[i] for i in seq], scheme), [labels[i] for i in seq]


def test_none_allows_everything_and_errors():
    trans, start, end = allowed_transitions(["A", "B"], "none")
    assert trans.all() and start.all() and end.all()
    with pytest.raises(ValueError, match=r"\[E013\]"):
        allowed_transitions(["B-PER", "X"], "BIO")
    with pytest.raises(ValueError, match=r"\[E013\]"):
        allowed_transitions(["L-PER"], "BIO")
    with pytest.raises(ValueError, match=r"\[E014\]"):
        allowed_transitions(["O"], "BIOES")


def constrain(scores, labels, scheme):
    trans, start, end = (torch.from_numpy(m) for m in allowed_transitions(labels, scheme))
    neg = lambda x, ok: torch.where(ok, x, torch.full_like(x, NEG_INF))  # noqa: E731
    return CRFScores(
        scores.emissions, scores.mask, neg(scores.transitions, trans), neg(scores.start, start), neg(scores.end, end)
    )


@pytest.mark.parametrize("labels,scheme", [(BIO, "BIO"), (BILUO, "BILUO")])
@pytest.mark.parametrize("seed", range(4))
def test_constrained_viterbi_and_marginals_equal_brute_force(labels, scheme, seed):
    lengths = [3, 1, 4, 0, 2]
    raw = random_batch(seed, lengths, len(labels))
    scores = constrain(raw, labels, scheme)
    paths, best = viterbi_decode(scores)
    probs = marginals(scores)
    for b, length in enumerate(lengths):
        if length == 0:
            continue
        valid = [p for p in all_paths(length, len(labels)) if valid_reference([labels[i] for i in p], scheme)]
        values = [brute_score(raw, b, p) for p in valid]
        top = max(range(len(valid)), key=values.__getitem__)
        assert tuple(paths[b, :length].tolist()) == valid[top]
        assert float(best[b]) == pytest.approx(values[top], abs=1e-9)
        log_z = torch.logsumexp(torch.tensor(values, dtype=torch.float64), 0)
        expected = torch.zeros(length, len(labels), dtype=torch.float64)
        for p, v in zip(valid, values):
            for t, y in enumerate(p):
                expected[t, y] += torch.exp(torch.tensor(v) - log_z)
        assert torch.allclose(probs[b, :length], expected, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**16), scheme=st.sampled_from(["BIO", "BILUO", "IOBES"]), length=st.integers(1, 30))
def test_property_constrained_output_is_always_valid(seed, scheme, length):
    labels = {"BIO": BIO, "BILUO": BILUO, "IOBES": IOBES}[scheme]
    raw = random_batch(seed, [length, max(1, length // 2)], len(labels), dtype=torch.float32)
    raw = CRFScores(raw.emissions * 10, *raw[1:])  # strong emissions pull towards invalid paths
    paths, _ = viterbi_decode(constrain(raw, labels, scheme))
    for b, n in enumerate([length, max(1, length // 2)]):
        assert valid_reference([labels[i] for i in paths[b, :n].tolist()], scheme)


def test_component_with_bio_constraints():
    data = [
        ("Anna lives in New York", {"tags": ["B-PER", "O", "O", "B-LOC", "I-LOC"]}),
        ("New York loves Anna", {"tags": ["B-LOC", "I-LOC", "O", "B-PER"]}),
    ]
    nlp = make_nlp(constraints="BIO")
    train(nlp, make_examples(nlp, data), steps=60)
    for text, annots in data:
        assert [t.tag_ for t in nlp(text)] == annots["tags"]
    tagger = nlp.get_pipe("crf_tagger")
    # untrained-looking inputs still decode to valid BIO
    for doc in nlp.pipe(["York York New Anna in", "in in York", "New"]):
        assert valid_reference([t.tag_ for t in doc], "BIO")
    probs = tagger.marginals([nlp.make_doc("York loves")])[0]
    assert probs[0, tagger.labels.index("I-LOC")] == 0.0  # I- cannot start


def test_component_rejects_bad_constraints():
    with pytest.raises(ValueError, match=r"\[E039\]"):
        make_nlp(constraints="BIOES")
    nlp = make_nlp(constraints="BILUO")
    with pytest.raises(ValueError, match=r"\[E013\]"):
        nlp.initialize(lambda: make_examples(nlp))
