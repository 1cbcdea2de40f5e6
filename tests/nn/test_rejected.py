"""The partial-label likelihood without rejected spans (spacy_crf.nn.rejected)
against brute-force enumeration of every label path, for every tag scheme,
with and without constraints, with padding and lengths 0 and 1."""

import itertools
import math
import random

import pytest
import torch

from spacy_crf.nn import constrain, crf
from spacy_crf.nn.crf import CRFScores
from spacy_crf.nn.rejected import log_partition_without
from spacy_crf.targets import entity_tags, span_patterns
from spacy_crf.targets.schemes import allowed_transitions

from ..helpers import brute_score

SCHEMES = ["BILUO", "IOBES", "BIO"]


def in_path(path, first, last, pattern):
    """Whether the span first..last of that pattern is one entity on the path
    (the definition of spans.py, written out)."""
    single, begin, middle, end, not_after = pattern
    if first == last:
        if path[first] != single:
            return False
    else:
        if path[first] != begin or path[last] != end:
            return False
        if any(path[t] != middle for t in range(first + 1, last)):
            return False
    return not (not_after >= 0 and last + 1 < len(path) and path[last + 1] == not_after)


def brute_force(scores, allowed, spans, patterns, b, length):
    K = scores.emissions.shape[2]
    values = []
    for path in itertools.product(range(K), repeat=length):
        if not all(allowed[b, t, y] for t, y in enumerate(path)):
            continue
        if any(row == b and in_path(path, first, last, patterns[kind]) for row, first, last, kind in spans):
            continue
        values.append(brute_score(scores, b, list(path)))
    if not values:
        return -math.inf
    return float(torch.logsumexp(torch.tensor(values, dtype=torch.float64), 0))


def random_case(seed, scheme, n_types, lengths, constrained):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    labels = entity_tags([f"T{i}" for i in range(n_types)], scheme)
    _, patterns = span_patterns(labels, scheme)
    K, B, T = len(labels), len(lengths), max(max(lengths), 1)
    scores = CRFScores(
        torch.randn(B, T, K, generator=gen, dtype=torch.float64) * 2,
        torch.arange(T) < torch.tensor(lengths)[:, None],
        torch.randn(K, K, generator=gen, dtype=torch.float64),
        torch.randn(K, generator=gen, dtype=torch.float64),
        torch.randn(K, generator=gen, dtype=torch.float64),
    )
    if constrained:
        masks = [torch.as_tensor(m) for m in allowed_transitions(labels, scheme)]
        scores = constrain(scores, *masks)
    allowed = torch.ones(B, T, K, dtype=torch.bool)
    for b, n in enumerate(lengths):
        for t in range(n):
            if rng.random() < 0.25:  # a known label: O, or a random one
                known = labels.index("O") if rng.random() < 0.5 else rng.randrange(K)
                allowed[b, t] = False
                allowed[b, t, known] = True
    spans = []
    for b, n in enumerate(lengths):
        for _ in range(rng.randint(0, 3) if n else 0):
            first = rng.randrange(n)
            last = min(n - 1, first + rng.randint(0, 2))
            spans.append((b, first, last, rng.randrange(n_types)))
    return scores, allowed, spans, patterns


CASES = [
    (seed, scheme, n_types, lengths, constrained)
    for seed, (scheme, n_types, lengths, constrained) in enumerate(
        [
            (scheme, n, lengths, c)
            for scheme in SCHEMES
            for n, lengths in [(1, [4, 1, 3]), (2, [3, 0, 2]), (1, [1]), (1, [5])]
            for c in (False, True)
        ]
    )
]


@pytest.mark.parametrize("seed,scheme,n_types,lengths,constrained", CASES)
def test_equals_brute_force(seed, scheme, n_types, lengths, constrained):
    scores, allowed, spans, patterns = random_case(seed, scheme, n_types, lengths, constrained)
    result = log_partition_without(
        scores, allowed, torch.tensor(spans, dtype=torch.long).view(-1, 4), torch.tensor(patterns)
    )
    for b, n in enumerate(lengths):
        if n == 0:
            assert float(result[b]) == 0.0
            continue
        expected = brute_force(scores, allowed, spans, patterns, b, n)
        if expected < -1e8 or expected == -math.inf:
            assert float(result[b]) <= -1e8
        else:
            assert float(result[b]) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_no_spans_is_the_partial_label_log_partition(scheme):
    scores, allowed, _, patterns = random_case(3, scheme, 2, [4, 2, 0, 1], True)
    result = log_partition_without(scores, allowed, torch.zeros(0, 4, dtype=torch.long), torch.tensor(patterns))
    clamped = scores._replace(emissions=scores.emissions.masked_fill(~allowed, crf.NEG_INF))
    assert torch.allclose(result, crf.log_partition(clamped), atol=1e-9)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gradient_matches_finite_differences(scheme):
    scores, allowed, spans, patterns = random_case(5, scheme, 1, [3, 2], False)
    spans_t = torch.tensor(spans + [(0, 0, 1, 0)], dtype=torch.long)

    def run(emissions, transitions):
        return log_partition_without(
            scores._replace(emissions=emissions, transitions=transitions), allowed, spans_t, torch.tensor(patterns)
        )

    leaves = (scores.emissions.clone().requires_grad_(True), scores.transitions.clone().requires_grad_(True))
    assert torch.autograd.gradcheck(run, leaves, eps=1e-6, atol=1e-5)


def test_duplicates_and_impossible_spans_change_nothing():
    scores, allowed, _, patterns = random_case(7, "BILUO", 1, [4], False)
    patterns_t = torch.tensor(patterns)
    once = log_partition_without(scores, allowed, torch.tensor([[0, 1, 2, 0]]), patterns_t)
    twice = log_partition_without(
        scores, allowed, torch.tensor([[0, 1, 2, 0], [0, 1, 2, 0], [0, 3, 7, 0], [5, 0, 0, 0]]), patterns_t
    )
    assert torch.allclose(once, twice)
    with pytest.raises(ValueError, match="spans must be"):
        log_partition_without(scores, allowed, torch.zeros(2, 3, dtype=torch.long), patterns_t)


def test_crf_loss_leaves_rejected_spans_out_of_the_gold_sum():
    from spacy_crf.nn import crf_loss

    scores, _, _, patterns = random_case(11, "BILUO", 1, [4, 3, 2], True)
    K = scores.emissions.shape[2]
    gold = torch.full(scores.mask.shape, -1, dtype=torch.long)
    gold[1, 0] = 0  # row 1: one known label, no rejection
    spans = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 0]])
    loss = crf_loss(scores, gold, rejected=(spans, torch.tensor(patterns)))
    # row 0 and row 2 have only rejections; row 1 only a known label
    allowed = torch.ones(3, 4, K, dtype=torch.bool)
    allowed[1, 0] = False
    allowed[1, 0, 0] = True
    expected = 0.0
    for b, n in enumerate([4, 3, 2]):
        log_z = brute_force(scores, torch.ones_like(allowed), [], patterns, b, n)
        rows_spans = [tuple(s) for s in spans.tolist() if s[0] == b]
        expected += log_z - brute_force(scores, allowed, rows_spans, patterns, b, n)
    assert float(loss) == pytest.approx(expected, abs=1e-6)
