"""Class-factored transitions: the exact CRF algorithms in O(K + C * C) a token.

Pure torch, no spaCy. With many labels (morphological bundles: K ~ 1,000) a
full transition matrix costs K * K a token in every recursion. A factored
matrix (BiLSTMCRF's transitions = "factored") scores a move from label i to
label j through the labels' classes (e.g. the UPOS of each bundle):

    transitions[i, j] = pair[class(i), class(j)] + leave[i] + enter[j]

Every such matrix is, exactly, a[i] + Q[class(i), class(j)] + offset[j], with
f(c) the first label of class c and

    a[i] = transitions[i, f(0)]                                        (K,)
    Q[c', c] = transitions[f(c'), f(c)] - transitions[f(c'), f(0)]      (C, C)
    offset[j] = transitions[0, j] - transitions[0, f(class(j))]        (K,)

(`split` reads them off the dense matrix, differentiably). So a CRFScores
keeps its dense (K, K) matrix, which the reference code (crf.py) and every
other algorithm read as they are, and its `classes` field, (K,) long class
ids 0..C-1, says that the matrix has this form. A step of the recursions
then reduces the K previous labels within each class (a log-sum or a max
over the labels of the class), moves between the C classes, and spreads the
result back to the K labels: log Z and its gradient, the forward and backward
scores, marginals and Viterbi in O(K + C * C) a token, n-best in O(K * C * k),
all equal to crf.py's on the same scores (tests/nn/test_factored.py, and brute
force).

`classes` must only be given for a matrix of this form: hard constraints
(constraints.constrain) break it and drop the field.
"""

from typing import List, NamedTuple, Optional, Tuple

import torch

from .crf import (
    CRFScores,
    _compute_dtype,
    _logmatmul,
    check_scores,
    in_batch_order,
    length_order,
)


def check_classes(classes: Optional[torch.Tensor], K: int) -> torch.Tensor:
    """The class ids of scores with K labels, checked: (K,) long, every class 0..C-1 used."""
    if classes is None or classes.dim() != 1 or classes.shape[0] != K or classes.dtype != torch.long:
        shape = None if classes is None else (classes.dtype, tuple(classes.shape))
        raise ValueError(f"classes must be a long tensor of shape {(K,)}, got {shape}")
    return classes


def factored_transitions(
    pair: torch.Tensor, leave: torch.Tensor, enter: torch.Tensor, classes: torch.Tensor
) -> torch.Tensor:
    """The dense (K, K) matrix pair[class(i), class(j)] + leave[i] + enter[j].

    pair (Tensor): (C, C). leave, enter (Tensor): (K,). classes (Tensor): (K,) long.
    """
    by_class = pair.index_select(0, classes).index_select(1, classes)  # shape: (K, K)
    return by_class + leave[:, None] + enter[None, :]


class Factors(NamedTuple):
    """A factored matrix as the recursions use it (see the module docstring)."""

    leave: torch.Tensor  # shape: (K,), a
    pair: torch.Tensor  # shape: (C, C), Q
    enter: torch.Tensor  # shape: (K,), offset
    membership: torch.Tensor  # shape: (K, C), 1.0 where label k is in class c
    classes: torch.Tensor  # shape: (K,) long

    def into_class(self) -> torch.Tensor:
        """(K, C): the score of moving from label i into class c, less the
        label's own `enter`."""
        return self.leave[:, None] + self.pair.index_select(0, self.classes)


def split(transitions: torch.Tensor, classes: torch.Tensor) -> Factors:
    """Read a factored (K, K) matrix as its Factors, differentiably."""
    K = transitions.shape[0]
    n_classes = int(classes.max()) + 1 if K else 0
    labels = torch.arange(K, device=classes.device)
    first = torch.full((n_classes,), K, dtype=torch.long, device=classes.device)
    first = first.scatter_reduce(0, classes, labels, reduce="amin")  # shape: (C,)
    leave = transitions[:, first[0]] if K else transitions.new_zeros(0)
    between = transitions.index_select(0, first).index_select(1, first)  # shape: (C, C)
    pair = between - between[:, :1]
    enter = transitions[0] - transitions[0].index_select(0, first.index_select(0, classes)) if K else leave
    membership = torch.zeros(K, n_classes, dtype=transitions.dtype, device=transitions.device)
    membership[labels, classes] = 1.0
    return Factors(leave, pair, enter, membership, classes)


def _parts(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor, Factors, torch.Tensor, torch.Tensor]:
    """The scores in the compute dtype, with the split matrix."""
    check_scores(scores)
    classes = check_classes(scores.classes, scores.emissions.shape[2])
    dtype = _compute_dtype(scores.emissions)
    factors = split(scores.transitions.to(dtype), classes)
    return scores.emissions.to(dtype), scores.mask, factors, scores.start.to(dtype), scores.end.to(dtype)


def forward_scores(emissions: torch.Tensor, mask: torch.Tensor, factors: Factors, start: torch.Tensor) -> torch.Tensor:
    """crf.forward_scores for a factored matrix (differentiable: autograd
    follows the loop). RETURNS (Tensor): (B, T, K) alphas."""
    leave, pair, enter, membership, classes = factors
    shift = pair.detach().max()
    exp_pair = torch.exp(pair - shift)  # shape: (C, C)
    zero = emissions.new_zeros(())
    # one view per step: autograd then gathers their gradients in one stack,
    # where indexing emissions[:, t] would build a (B, T, K) gradient a step
    steps = emissions.unbind(1)
    alpha = start + steps[0]  # shape: (B, K)
    alphas = [alpha]
    for t in range(1, emissions.shape[1]):
        by_class = _logmatmul(alpha + leave, membership, zero)  # shape: (B, C)
        to_class = _logmatmul(by_class, exp_pair, shift)  # shape: (B, C)
        step = to_class.index_select(1, classes) + enter + steps[t]
        alpha = torch.where(mask[:, t, None], step, alpha)
        alphas.append(alpha)
    return torch.stack(alphas, dim=1)


def backward_scores(emissions: torch.Tensor, mask: torch.Tensor, factors: Factors, end: torch.Tensor) -> torch.Tensor:
    """crf.backward_scores for a factored matrix. RETURNS (Tensor): (B, T, K) betas."""
    leave, pair, enter, membership, classes = factors
    B, T, K = emissions.shape
    shift = pair.detach().max()
    exp_pair_t = torch.exp(pair - shift).t()
    zero = emissions.new_zeros(())
    beta = end.expand(B, K)
    betas = [beta]
    for t in range(T - 2, -1, -1):
        # the log-sum over the labels j of each class of what follows label j at t + 1
        by_class = _logmatmul(emissions[:, t + 1] + beta + enter, membership, zero)  # shape: (B, C)
        from_class = _logmatmul(by_class, exp_pair_t, shift)  # shape: (B, C)
        step = from_class.index_select(1, classes) + leave
        beta = torch.where(mask[:, t + 1, None], step, beta)
        betas.append(beta)
    return torch.stack(betas[::-1], dim=1)


def log_partition(scores: CRFScores) -> torch.Tensor:
    """crf.log_partition for a factored matrix, with its exact gradient
    (autograd through the forward recursion) to the emissions and to every
    entry of the dense matrix that the split reads."""
    emissions, mask, factors, start, end = _parts(scores)
    B, T, _ = emissions.shape
    if T == 0:
        return emissions.new_zeros(B)
    alphas = forward_scores(emissions, mask, factors, start)
    log_z = torch.logsumexp(alphas[:, -1] + end, dim=1)
    return torch.where(mask[:, 0], log_z, torch.zeros_like(log_z))


@torch.no_grad()
def forward_backward(scores: CRFScores) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """spans.forward_backward for a factored matrix: alphas, betas (B, T, K)
    and log Z (B,), in the compute dtype."""
    emissions, mask, factors, start, end = _parts(scores)
    B, T, K = emissions.shape
    if T == 0:
        empty = emissions.new_zeros(B, 0, K)
        return empty, empty.clone(), emissions.new_zeros(B)
    alphas = forward_scores(emissions, mask, factors, start)
    betas = backward_scores(emissions, mask, factors, end)
    log_z = torch.logsumexp(alphas[:, -1] + end, dim=1)
    return alphas, betas, torch.where(mask[:, 0], log_z, torch.zeros_like(log_z))


@torch.no_grad()
def marginals(scores: CRFScores) -> torch.Tensor:
    """crf.marginals for a factored matrix. RETURNS (Tensor): (B, T, K)."""
    alphas, betas, log_z = forward_backward(scores)
    probs = torch.exp(alphas + betas - log_z[:, None, None])
    return probs * scores.mask[..., None]


@torch.no_grad()
def viterbi_decode(scores: CRFScores, *, compact: Optional[bool] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode for a factored matrix. Each step keeps the best
    score of each class's labels (a scatter max, O(K)), moves between classes
    (C * C) and spreads back to the labels; backtracking finds the best
    predecessor of each chosen label from the kept step scores (O(K) a row).

    compact (Optional[bool]): as crf.viterbi_decode's: True orders the rows by
        length and runs each step on the rows still running (one host copy of
        the lengths); None: compact on CPU, masked on other devices.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long (padded steps repeat
        the last real label), scores (B,) (0 for an empty row).
    """
    emissions, mask, factors, start, end = _parts(scores)
    B, T, K = emissions.shape
    if T == 0:
        return mask.new_zeros((B, 0), dtype=torch.long), emissions.new_zeros(B)
    if compact is None:
        compact = emissions.device.type == "cpu"
    if not compact:
        paths, best = _viterbi(emissions, factors, start, end, mask=mask)
    else:
        order, running = length_order(mask)
        paths, best = _viterbi(emissions, factors, start, end, running=running, order=order)
        paths, best = in_batch_order(order, paths, best)
    return paths, torch.where(mask[:, 0], best, torch.zeros_like(best))


def _viterbi(
    emissions: torch.Tensor,
    factors: Factors,
    start: torch.Tensor,
    end: torch.Tensor,
    *,
    mask: Optional[torch.Tensor] = None,
    running: Optional[List[int]] = None,
    order: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The recursion and backtracking, masked (every step over the whole
    batch) or compact (the rows taken in `order`, by descending length,
    running[t] of them at step t; each step gathers its rows' emissions)."""
    leave, pair, enter, _, classes = factors
    B, T, K = emissions.shape
    C = pair.shape[0]
    index = classes.expand(B, K)

    def emitted(t: int, n: int) -> torch.Tensor:
        """The emissions at step t of the first n rows (in `order`)."""
        return emissions[:, t] if order is None else emissions[:, t].index_select(0, order[:n])

    last = start + emitted(0, B)  # shape: (n, K), the scores after the last step of the rows running
    # compact: each row's scores after its own last step, written when it ends
    # (or after the loop, for the rows still running then)
    score = torch.empty_like(last) if running is not None else last
    # leaving[t]: the scores after step t - 1 plus `leave`, rows running at t (t >= 1; [0] is never read)
    leaving = [last]
    running_before = B
    for t in range(1, T):
        n = B if running is None else running[t]
        if n == 0:
            break
        if n < running_before:  # rows n.. ended at step t - 1
            score[n:running_before] = last[n:running_before]
        current = last[:n] + leave
        leaving.append(current)
        best_in_class = current.new_full((n, C), float("-inf")).scatter_reduce_(1, index[:n], current, "amax")
        to_class = (best_in_class.unsqueeze(2) + pair).amax(dim=1)  # shape: (n, C)
        # each label gets the move into its class, its `enter` and its emission
        step = to_class.index_select(1, classes).add_(enter).add_(emitted(t, n))
        if mask is not None:
            step = torch.where(mask[:, t, None], step, last)
        last = step
        running_before = n
    if running is None:
        score = last
    else:
        score[:running_before] = last[:running_before]
    best_score, label = (score + end).max(dim=1)  # shape: (B,)
    paths = torch.empty(T, B, dtype=torch.long, device=emissions.device)
    paths[T - 1] = label
    moves_into = pair.index_select(0, classes).t().contiguous()  # shape: (C, K): Q[class(i), c] in row c
    for t in range(T - 1, 0, -1):
        n = B if running is None else running[t]
        if n:
            # the best predecessor i of each running row's label:
            # score at t - 1 + a[i] + Q[class(i), class(label)]
            moves = moves_into.index_select(0, classes[label[:n]])  # shape: (n, K)
            previous = moves.add_(leaving[t]).argmax(dim=1)
            if mask is not None:
                label = torch.where(mask[:, t], previous, label)
            else:
                label[:n] = previous
        paths[t - 1] = label
    return paths.t().contiguous(), best_score


@torch.no_grad()
def nbest_decode(scores: CRFScores, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.nbest_decode for a factored matrix: each class keeps the k best
    extensions into it (of the K * k partial paths), each label those of its
    class. RETURNS (Tuple[Tensor, Tensor]): paths (B, k, T), scores (B, k)."""
    emissions, mask, factors, start, end = _parts(scores)
    into_class, offset, classes = factors.into_class(), factors.enter, factors.classes
    B, T, K = emissions.shape
    device = emissions.device
    if T == 0:
        return torch.zeros(B, k, 0, dtype=torch.long, device=device), emissions.new_zeros(B, k)
    C = into_class.shape[1]
    score = emissions.new_full((B, K, k), float("-inf"))  # shape: (B, K, k)
    score[:, :, 0] = start + emissions[:, 0]
    identity = torch.arange(K * k, device=device).view(1, K, k).expand(B, K, k)
    history = []
    for t in range(1, T):
        # shape: (B, K_prev, k, C) -> (B, C, K_prev * k)
        extended = (score.unsqueeze(3) + into_class.view(1, K, 1, C)).reshape(B, K * k, C).transpose(1, 2)
        best, pointer = extended.topk(k, dim=2)  # shape: (B, C, k); K * k >= k
        step = best.index_select(1, classes) + (offset + emissions[:, t]).unsqueeze(2)  # shape: (B, K, k)
        step_mask = mask[:, t, None, None]
        score = torch.where(step_mask, step, score)
        history.append(torch.where(step_mask, pointer.index_select(1, classes), identity))
    final = (score + end.view(1, K, 1)).reshape(B, K * k)
    best_scores, state = final.topk(k, dim=1)  # shape: (B, k)
    path = [state // k]
    for pointer in reversed(history):
        state = pointer.reshape(B, K * k).gather(1, state)
        path.append(state // k)
    paths = torch.stack(path[::-1], dim=2)  # shape: (B, k, T)
    best_scores = torch.where(mask[:, :1], best_scores, torch.zeros_like(best_scores))
    return paths, best_scores
