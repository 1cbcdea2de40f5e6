"""The distillation loss (spacy_crf.nn.divergence): KL(teacher || student)
and its gradient against brute-force enumeration of every label path, for
full and factored transitions, with constraints, lengths 0 and 1 and padded
batches; 0 (with a 0 gradient) where the student is the teacher. float64."""

import pytest
import torch

from spacy_crf.nn import constrain, factored
from spacy_crf.nn.crf import CRFScores
from spacy_crf.nn.divergence import kl_divergence
from spacy_crf.targets import allowed_transitions

from ..helpers import all_paths, random_batch

CASES = [
    (seed, lengths, n_labels)
    for seed, (lengths, n_labels) in enumerate(
        [([1], 1), ([1], 3), ([5], 2), ([3, 1, 5, 2], 3), ([2, 0, 3], 3), ([4, 4], 4), ([0, 0], 2)] * 2
    )
]

FACTORED_CASES = [
    (0, [1], [0, 1, 0]),
    (1, [3, 1, 4, 0], [0, 1, 1]),
    (2, [4, 2], [1, 0, 1, 0]),
    (3, [5], [0, 0]),
]

BIO = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]


def trainable(scores):
    """The scores as leaves that need a gradient."""
    emissions, mask, transitions, start, end, classes = scores
    leaves = [t.detach().clone().requires_grad_(True) for t in (emissions, transitions, start, end)]
    return CRFScores(leaves[0], mask, leaves[1], leaves[2], leaves[3], classes)


def path_scores(scores, b, paths):
    """Score(x, y) of each path of row b, differentiable: (n_paths,)."""
    emissions, _, transitions, start, end = scores[:5]
    index = torch.tensor(paths)  # shape: (P, n)
    total = start[index[:, 0]] + end[index[:, -1]] + emissions[b, torch.arange(index.shape[1]), index].sum(1)
    if index.shape[1] > 1:
        total = total + transitions[index[:, :-1], index[:, 1:]].sum(1)
    return total


def brute_kl(student, teacher, lengths):
    """KL(teacher || student) of each row by enumerating every path, differentiable in the student."""
    K = student.emissions.shape[2]
    values = []
    for b, length in enumerate(lengths):
        if length == 0:
            values.append(student.emissions.new_zeros(()))
            continue
        paths = all_paths(length, K)
        log_p_t = torch.log_softmax(path_scores(teacher, b, paths), 0)
        log_p_s = torch.log_softmax(path_scores(student, b, paths), 0)
        p_t = log_p_t.exp()
        # a path the teacher forbids (probability 0) adds nothing
        values.append((p_t * (log_p_t - log_p_s)).where(p_t > 0, torch.zeros_like(p_t)).sum())
    return torch.stack(values)


def assert_equal_to_brute_force(student, teacher, lengths):
    got_student, brute_student = trainable(student), trainable(student)
    got = kl_divergence(got_student, teacher)
    expected = brute_kl(brute_student, teacher, lengths)
    assert got.dtype == torch.float64
    assert torch.allclose(got, expected, atol=1e-9, rtol=1e-9), (got, expected)
    if not any(lengths):
        return got
    got.sum().backward()
    expected.sum().backward()
    for name, a, b in zip(
        ("emissions", "transitions", "start", "end"),
        (got_student.emissions, got_student.transitions, got_student.start, got_student.end),
        (brute_student.emissions, brute_student.transitions, brute_student.start, brute_student.end),
    ):
        # a tensor that no path reads (transitions of rows of length 1) gets no gradient: 0
        grad_a = torch.zeros_like(a) if a.grad is None else a.grad
        grad_b = torch.zeros_like(b) if b.grad is None else b.grad
        assert torch.allclose(grad_a, grad_b, atol=1e-9), name
    return got


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_kl_and_gradient_equal_brute_force(seed, lengths, n_labels):
    student = random_batch(seed, lengths, n_labels)
    teacher = random_batch(seed + 500, lengths, n_labels)
    got = assert_equal_to_brute_force(student, teacher, lengths)
    for b, length in enumerate(lengths):
        assert got[b] >= 0
        if length == 0:
            assert got[b] == 0


@pytest.mark.parametrize("seed,lengths,n_labels", CASES)
def test_kl_is_zero_with_zero_gradient_when_student_is_teacher(seed, lengths, n_labels):
    teacher = random_batch(seed, lengths, n_labels)
    student = trainable(teacher)
    kl = kl_divergence(student, teacher)
    assert torch.allclose(kl, torch.zeros_like(kl), atol=1e-12)
    kl.sum().backward()
    for grad in (student.emissions.grad, student.transitions.grad, student.start.grad, student.end.grad):
        assert grad is None or torch.allclose(grad, torch.zeros_like(grad), atol=1e-12)


def factored_leaves(seed, lengths, classes):
    """Random emissions, start, end and factors (pair, leave, enter), leaves that need a gradient."""
    gen = torch.Generator().manual_seed(seed)
    K, C = len(classes), max(classes) + 1
    shapes = [(len(lengths), max(max(lengths), 1), K), (K,), (K,), (C, C), (K,), (K,)]
    return [(torch.randn(*shape, generator=gen, dtype=torch.float64) * 1.5).requires_grad_(True) for shape in shapes]


def factored_scores(leaves, lengths, classes):
    """The scores of the leaves: the dense matrix of the factors, with the classes."""
    emissions, start, end, pair, leave, enter = leaves
    classes_t = torch.tensor(classes)
    T = emissions.shape[1]
    transitions = factored.factored_transitions(pair, leave, enter, classes_t)
    return CRFScores(emissions, torch.arange(T) < torch.tensor(lengths)[:, None], transitions, start, end, classes_t)


@pytest.mark.parametrize("seed,lengths,classes", FACTORED_CASES)
@pytest.mark.parametrize("teacher_factored", [True, False])
def test_factored_kl_and_gradient_equal_brute_force(seed, lengths, classes, teacher_factored):
    """log Z_s by the factored algorithms; the gradient reaches the factors
    (pair, leave, enter) as through the dense matrix."""
    if teacher_factored:
        teacher = factored_scores([t.detach() for t in factored_leaves(seed + 500, lengths, classes)], lengths, classes)
    else:
        teacher = random_batch(seed, lengths, len(classes))
    got_leaves, brute_leaves = factored_leaves(seed, lengths, classes), factored_leaves(seed, lengths, classes)
    got = kl_divergence(factored_scores(got_leaves, lengths, classes), teacher)
    expected = brute_kl(factored_scores(brute_leaves, lengths, classes), teacher, lengths)
    assert torch.allclose(got, expected, atol=1e-9, rtol=1e-9), (got, expected)
    got.sum().backward()
    expected.sum().backward()
    for a, b in zip(got_leaves, brute_leaves):
        grad_a = torch.zeros_like(a) if a.grad is None else a.grad
        grad_b = torch.zeros_like(b) if b.grad is None else b.grad
        assert torch.allclose(grad_a, grad_b, atol=1e-9)
    if teacher_factored:
        same = factored_scores(got_leaves, lengths, classes)
        zero = kl_divergence(same, CRFScores(*(t.detach() for t in same[:5]), same.classes))
        assert torch.allclose(zero, torch.zeros_like(zero), atol=1e-12)


def constrained(scores, scheme="BIO"):
    masks = [torch.from_numpy(m) for m in allowed_transitions(BIO, scheme)]
    return constrain(scores, *masks)


@pytest.mark.parametrize("seed,lengths", [(0, [1]), (1, [3, 1, 0, 2]), (2, [4, 3])])
def test_constrained_kl_equals_brute_force(seed, lengths):
    """Teacher and student under the same constraints: the teacher's constrained
    distribution, the student's log Z over the paths its constraints allow."""
    student = constrained(random_batch(seed, lengths, len(BIO)))
    teacher = constrained(random_batch(seed + 500, lengths, len(BIO)))
    got = assert_equal_to_brute_force(student, teacher, lengths)
    assert bool(torch.isfinite(got).all()) and float(got.detach().max()) < 100
    zero = kl_divergence(trainable(teacher), teacher)
    assert torch.allclose(zero, torch.zeros_like(zero), atol=1e-12)


@pytest.mark.parametrize("seed,lengths", [(0, [1]), (1, [3, 1, 0, 2])])
def test_unconstrained_student_of_a_constrained_teacher_equals_brute_force(seed, lengths):
    student = random_batch(seed, lengths, len(BIO))
    teacher = constrained(random_batch(seed + 500, lengths, len(BIO)))
    assert_equal_to_brute_force(student, teacher, lengths)


def test_kl_checks_that_both_score_the_same_rows():
    student = random_batch(0, [2, 3], 3)
    with pytest.raises(ValueError, match="one shape"):
        kl_divergence(student, random_batch(0, [2, 3], 4))
    with pytest.raises(ValueError, match="masks differ"):
        kl_divergence(student, random_batch(0, [3, 2], 3))


def test_kl_of_an_empty_batch_is_empty():
    scores = random_batch(0, [0], 2)
    empty = CRFScores(scores.emissions[:0, :0], scores.mask[:0, :0], *scores[2:5])
    assert kl_divergence(empty, empty).shape == (0,)


def test_float32_kl_is_close_to_float64():
    lengths = [6, 3, 1]
    student, teacher = random_batch(3, lengths, 4), random_batch(4, lengths, 4)
    exact = kl_divergence(student, teacher)
    single = kl_divergence(
        CRFScores(*(t.float() if t.is_floating_point() else t for t in student[:5])),
        CRFScores(*(t.float() if t.is_floating_point() else t for t in teacher[:5])),
    )
    assert single.dtype == torch.float32
    # float32 sums of a few dozen terms of size ~10: rounding ~1e-5
    assert torch.allclose(single.double(), exact, atol=1e-4)
