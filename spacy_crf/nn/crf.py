"""Linear-chain CRF maths in PyTorch: scores, log-partition, NLL and Viterbi.

Pure torch, no spaCy. Every function works on a padded batch:

    emissions   # shape: (B, T, K)  per-token label scores
    mask        # shape: (B, T)     bool, True on real tokens, left-aligned
    transitions # shape: (K, K)     transitions[i, j] scores label i -> label j
    start       # shape: (K,)       score of the first label
    end         # shape: (K,)       score of the last label

A sequence of length 0 (its mask row all False) has log-partition 0, NLL 0 and
an empty path. Computation runs in float32 or wider, whatever the input dtype.

This is the reference: triton_crf.py's fused kernels are tested against these
functions, and dispatch.py (whose log_partition, negative_log_likelihood,
viterbi_decode and marginals `spacy_crf.nn` exports) runs this code wherever
the kernels do not. This module imports neither.
"""

from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import torch

# Stands in for log(0). Finite, so that logsumexp never meets a row of -inf
# (whose gradient is NaN); exp(NEG_INF - x) is exactly 0 for any sane score.
NEG_INF = -1e9


class CRFScores(NamedTuple):
    """Everything the CRF needs for one padded batch."""

    emissions: torch.Tensor  # shape: (B, T, K)
    mask: torch.Tensor  # shape: (B, T), bool
    transitions: torch.Tensor  # shape: (K, K)
    start: torch.Tensor  # shape: (K,)
    end: torch.Tensor  # shape: (K,)
    # (K,) long class ids when the transitions are class-factored (factored.py
    # runs the fast algorithms); None for a full matrix. The code here reads
    # the dense matrix and ignores it.
    classes: Optional[torch.Tensor] = None


def check_scores(scores: CRFScores) -> None:
    """Raise ValueError naming the shapes if the tensors do not fit together."""
    emissions, mask, transitions, start, end, _ = scores
    if emissions.dim() != 3:
        raise ValueError(f"emissions must be (B, T, K), got {tuple(emissions.shape)}")
    B, T, K = emissions.shape
    if tuple(mask.shape) != (B, T) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor of shape {(B, T)}, got {mask.dtype} {tuple(mask.shape)}")
    if tuple(transitions.shape) != (K, K):
        raise ValueError(f"transitions must be {(K, K)}, got {tuple(transitions.shape)}")
    if tuple(start.shape) != (K,) or tuple(end.shape) != (K,):
        raise ValueError(f"start and end must be {(K,)}, got {tuple(start.shape)} and {tuple(end.shape)}")


def check_allowed(scores: CRFScores, allowed: torch.Tensor) -> None:
    """Raise ValueError naming the shapes if `allowed` does not fit the emissions."""
    if tuple(allowed.shape) != tuple(scores.emissions.shape):
        raise ValueError(f"allowed must be {tuple(scores.emissions.shape)}, got {tuple(allowed.shape)}")


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def allowed_from_tags(
    tags: torch.Tensor,
    n_labels: int,
    *,
    excluded: Optional[torch.Tensor] = None,
    groups: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Turn gold label ids into the set of labels each token may take.

    tags (Tensor): (B, T) long; a label id, -1 where the gold label is
        unknown, or K + g where the token may take the labels of row g of
        `groups` (a label known in part, e.g. its UPOS but not its features).
    n_labels (int): K, the number of labels.
    excluded (Optional[Tensor]): (B, T) long; a label id the token must not
        take (spaCy's "!TAG" negative label), or -1 for none.
    groups (Optional[Tensor]): (G, K) bool, the label sets that tags >= K name.
    RETURNS (Tensor): (B, T, K) bool, True where the label is allowed.
    """
    labels = torch.arange(n_labels, device=tags.device)
    allowed = (tags.unsqueeze(-1) == labels) | (tags.unsqueeze(-1) < 0)
    if groups is not None and groups.shape[0]:
        in_group = (tags - n_labels).clamp(0, groups.shape[0] - 1)
        allowed = torch.where((tags >= n_labels).unsqueeze(-1), groups[in_group], allowed)
    if excluded is not None:
        allowed &= excluded.unsqueeze(-1) != labels
    return allowed  # shape: (B, T, K)


def path_score(scores: CRFScores, tags: torch.Tensor) -> torch.Tensor:
    """Score(x, y) of one given label path per sequence.

    tags (Tensor): (B, T) long label ids; values at padded steps are ignored.
    RETURNS (Tensor): (B,) start[y1] + sum emit + sum trans + end[yn].
    """
    emissions, mask, transitions, start, end, _ = scores
    dtype = _compute_dtype(emissions)
    emissions = emissions.to(dtype)
    B, T, _ = emissions.shape
    if T == 0:
        return emissions.new_zeros(B)
    tags = tags.masked_fill(~mask, 0)
    maskf = mask.to(dtype)
    emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)  # shape: (B, T)
    total = (emit * maskf).sum(1)
    if T > 1:
        trans = transitions.to(dtype)[tags[:, :-1], tags[:, 1:]]  # shape: (B, T-1)
        total = total + (trans * maskf[:, 1:]).sum(1)
    lengths = mask.sum(1)
    last = tags.gather(1, (lengths - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
    total = total + start.to(dtype)[tags[:, 0]] + end.to(dtype)[last]
    return torch.where(lengths > 0, total, torch.zeros_like(total))


def log_partition(scores: CRFScores) -> torch.Tensor:
    """log Z(x) by the forward algorithm, with its exact gradient.

    The gradient with respect to the emissions is the marginal probability of
    each label at each token (forward-backward); those of transitions, start
    and end are the expected transition, first- and last-label counts.

    RETURNS (Tensor): (B,) the log-sum-exp of Score(x, y) over all paths y.
    """
    check_scores(scores)
    emissions, mask, transitions, start, end, _ = scores
    dtype = _compute_dtype(emissions)
    if emissions.shape[1] == 0:
        return emissions.new_zeros(emissions.shape[0], dtype=dtype)
    log_z: torch.Tensor = _LogPartition.apply(
        emissions.to(dtype), mask, transitions.to(dtype), start.to(dtype), end.to(dtype)
    )
    return torch.where(mask[:, 0], log_z, torch.zeros_like(log_z))


def _logmatmul(scores: torch.Tensor, exp_matrix: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """log(exp(scores) @ exp(matrix)) for exp_matrix = exp(matrix - shift).

    Rescaling each row by its maximum keeps the product in range, and the step
    is one BLAS call instead of a (B, K, K) log-sum-exp.
    """
    top = scores.max(dim=1, keepdim=True).values  # shape: (B, 1)
    summed = torch.exp(scores - top) @ exp_matrix  # shape: (B, K)
    return torch.log(summed.clamp_min_(torch.finfo(scores.dtype).tiny)).add_(top + shift)


def forward_scores(
    emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, start: torch.Tensor
) -> torch.Tensor:
    """The forward recursion: alpha_t(k), the log-sum of the scores of every
    prefix y1..yt with yt = k (start, emissions up to t and the transitions
    between). Padded steps carry alpha on, so alphas[:, -1] holds each
    sequence's alpha at its own last token.

    emissions (Tensor): (B, T, K), T >= 1, in the compute dtype (as the
        other arguments). mask (Tensor): (B, T) bool.
    transitions (Tensor): (K, K). start (Tensor): (K,).
    RETURNS (Tensor): (B, T, K) alphas.
    """
    B, T, K = emissions.shape
    shift = transitions.max()
    exp_transitions = torch.exp(transitions - shift)  # shape: (K, K)
    alphas = emissions.new_empty(B, T, K)
    alpha = start + emissions[:, 0]  # shape: (B, K)
    alphas[:, 0] = alpha
    for t in range(1, T):
        step = _logmatmul(alpha, exp_transitions, shift).add_(emissions[:, t])
        alpha = torch.where(mask[:, t, None], step, alpha)
        alphas[:, t] = alpha
    return alphas


def backward_scores(
    emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, end: torch.Tensor
) -> torch.Tensor:
    """The backward recursion: beta_t(i), the log-sum of the scores of every
    continuation after label i at step t (the transitions, emissions after t
    and end). Padded steps carry beta back unchanged from the end, so a
    sequence's beta at its own last token is `end`.

    emissions (Tensor): (B, T, K), T >= 1, in the compute dtype (as the
        other arguments). mask (Tensor): (B, T) bool.
    transitions (Tensor): (K, K). end (Tensor): (K,).
    RETURNS (Tensor): (B, T, K) betas.
    """
    B, T, K = emissions.shape
    shift = transitions.max()
    exp_transitions_t = torch.exp(transitions - shift).t()
    betas = emissions.new_empty(B, T, K)
    beta = end.expand(B, K)
    betas[:, T - 1] = beta
    for t in range(T - 2, -1, -1):
        step = _logmatmul(emissions[:, t + 1] + beta, exp_transitions_t, shift)
        beta = torch.where(mask[:, t + 1, None], step, beta)
        betas[:, t] = beta
    return betas


class _LogPartition(torch.autograd.Function):
    """Forward algorithm with a hand-written forward-backward gradient."""

    @staticmethod
    def forward(
        ctx: Any,
        emissions: torch.Tensor,
        mask: torch.Tensor,
        transitions: torch.Tensor,
        start: torch.Tensor,
        end: torch.Tensor,
    ) -> torch.Tensor:
        alphas = forward_scores(emissions, mask, transitions, start)  # shape: (B, T, K)
        log_z = torch.logsumexp(alphas[:, -1] + end, dim=1)  # shape: (B,)
        ctx.save_for_backward(emissions, mask, transitions, end, alphas, log_z)
        return log_z

    @staticmethod
    def backward(ctx: Any, grad_log_z: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        emissions, mask, transitions, end, alphas, log_z = ctx.saved_tensors
        _, T, K = emissions.shape
        shift = transitions.max()
        exp_transitions = torch.exp(transitions - shift)
        betas = backward_scores(emissions, mask, transitions, end)  # shape: (B, T, K)
        g = grad_log_z[:, None, None]  # shape: (B, 1, 1)
        marginals = torch.exp(alphas + betas - log_z[:, None, None])  # shape: (B, T, K)
        grad_emissions = marginals * (mask[..., None] * g)
        grad_start = (marginals[:, 0] * g[:, 0]).sum(0)
        grad_end = (marginals[:, T - 1] * g[:, 0]).sum(0)
        grad_transitions = torch.zeros_like(transitions)
        if T > 1:
            # expected transition counts: sum over b, t of
            # exp(alpha_{t-1}(i) + trans(i, j) + emit_t(j) + beta_t(j) - log Z)
            before = alphas[:, :-1]  # shape: (B, T-1, K)
            after = emissions[:, 1:] + betas[:, 1:]
            top_before = before.max(-1, keepdim=True).values
            top_after = after.max(-1, keepdim=True).values
            weight = torch.exp(top_before + top_after + shift - log_z[:, None, None])
            weight = weight * (mask[:, 1:, None] * g)
            left = (torch.exp(before - top_before) * weight).reshape(-1, K)
            right = torch.exp(after - top_after).reshape(-1, K)
            grad_transitions = exp_transitions * (left.t() @ right)
        return grad_emissions, None, grad_transitions, grad_start, grad_end


def negative_log_likelihood(
    scores: CRFScores, allowed: torch.Tensor, *, partition: Optional[Callable[[CRFScores], torch.Tensor]] = None
) -> torch.Tensor:
    """The CRF loss per sequence, with partial labels.

    NLL = log Z(x) - log sum_{y agreeing with the gold} exp Score(x, y).
    Where every token has one allowed label this is log Z(x) - Score(x, y_gold),
    a gather; only sequences with a token whose gold label is unknown (all
    labels allowed) or negative ("!TAG") need the second forward pass.

    allowed (Tensor): (B, T, K) bool, the labels each token may take.
    partition (Optional[Callable]): the log Z function (e.g. factored.py's);
        None for this module's `log_partition`.
    RETURNS (Tensor): (B,) non-negative NLL; 0 for a sequence with no known label.
    """
    check_allowed(scores, allowed)
    partition = partition or log_partition
    emissions, mask, transitions, start, end, classes = scores
    dtype = _compute_dtype(emissions)
    emissions = emissions.to(dtype)
    scores = CRFScores(emissions, mask, transitions, start, end, classes)
    log_z = partition(scores)
    ambiguous = ((allowed.sum(-1) != 1) & mask).any(1)  # shape: (B,)
    gold_score = path_score(scores, allowed.to(torch.uint8).argmax(-1))
    rows = ambiguous.nonzero().squeeze(1)
    if rows.numel():
        clamped = emissions[rows].masked_fill(~allowed[rows], NEG_INF)
        partial = partition(CRFScores(clamped, mask[rows], transitions, start, end, classes))
        gold_score = gold_score.index_put((rows,), partial)
    # >= 0 in exact arithmetic; clamp away float rounding (e.g. -4e-9 for K=1)
    return (log_z - gold_score).clamp_min(0.0)


@torch.no_grad()
def viterbi_decode(scores: CRFScores, *, compact: Optional[bool] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The highest-scoring path of every sequence in the batch.

    The forward pass keeps only the max-product scores of every step (no
    backpointer table; see `_max_plus_step` for the layout). Backtracking then
    recovers, for the whole batch at once, the best predecessor of each chosen
    label: a (B, K) argmax per step. Padded steps keep the label, so every
    sequence starts backtracking at its own last token.

    compact (Optional[bool]): True orders the batch by length (a permutation,
        undone at the end) so that the sequences still running at a step are a
        prefix of it, and each step works on that prefix only: work follows the
        real tokens, not B * T. It needs the number of running sequences per
        step on the host (one small copy before the loop). False runs every
        step over the whole batch with masks and no host copy. None (default):
        compact on CPU, whole batch on GPU. Both give the same result.
    RETURNS (Tuple[Tensor, Tensor]): the paths, (B, T) long on the input's
        device (values at padded steps repeat the last real label), and their
        scores, (B,) (0 for an empty sequence).
    """
    check_scores(scores)
    emissions, mask, transitions, start, end, _ = scores
    dtype = _compute_dtype(emissions)
    B, T, K = emissions.shape
    if T == 0:
        return mask.new_zeros((B, 0), dtype=torch.long), emissions.new_zeros(B, dtype=dtype)
    transitions = transitions.to(dtype)
    start = start.to(dtype)
    end = end.to(dtype)
    if compact is None:
        compact = emissions.device.type == "cpu"
    emissions = emissions.to(dtype)
    if not compact:
        paths, best_score = _viterbi(emissions, transitions, start, end, mask=mask)
    else:
        order, running = length_order(mask)
        paths, best_score = _viterbi(emissions.index_select(0, order), transitions, start, end, running=running)
        paths, best_score = in_batch_order(order, paths, best_score)
    best_score = torch.where(mask[:, 0], best_score, torch.zeros_like(best_score))
    return paths, best_score


def length_order(mask: torch.Tensor) -> Tuple[torch.Tensor, List[int]]:
    """The rows by descending length, and how many of them run at each step
    (on the host: one small copy), for compact decoding.

    mask (Tensor): (B, T) bool. RETURNS (Tuple[Tensor, List[int]]): the order
        (B,) long and running (T,) counts.
    """
    lengths = mask.sum(1)
    order = torch.argsort(lengths, descending=True, stable=True)
    steps = torch.arange(mask.shape[1], device=mask.device)
    return order, (lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(1).tolist()


def in_batch_order(order: torch.Tensor, paths: torch.Tensor, scores: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Paths (B, T) and scores (B,) of rows taken in `order`, back in the batch's order."""
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.shape[0], device=order.device)
    return paths.index_select(0, inverse), scores[inverse]


def _max_plus_step(score: torch.Tensor, incoming: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
    """max_i (score[b, i] + transitions[i, j]) for every row b and label j.

    The sums are laid out (K_prev, B, K_next), so the max over previous labels
    reduces over the leading axis: an elementwise max of K contiguous (B, K)
    slabs, which lands straight back in the (B, K) layout of the scores. With
    many labels the next labels are taken a block at a time (see
    `_label_block`), so the sums never exceed the buffer.

    score (Tensor): (B, K). incoming (Tensor): (K_prev, 1, K_next), the
    transitions. buffer (Tensor): scratch for at least K * B sums; its size
    sets how many next labels are scored at once.
    RETURNS (Tensor): (B, K_next).
    """
    B, K = score.shape
    block = min(K, buffer.numel() // (K * B))
    if block >= K:
        sums = buffer[: K * B * K].view(K, B, K)
        torch.add(score.t().unsqueeze(2), incoming, out=sums)
        return sums.view(K, B * K).amax(dim=0).view(B, K)
    best = score.new_empty(B, K)
    for first in range(0, K, block):
        n = min(block, K - first)
        sums = buffer[: K * B * n].view(K, B, n)
        torch.add(score.t().unsqueeze(2), incoming[:, :, first : first + n], out=sums)
        best[:, first : first + n] = sums.amax(dim=0)
    return best


# The most scores one decoding step holds at once (64 MiB of float32): with
# many labels (K * B * K sums a step: 1,000 labels and 64 rows would be 256 MiB)
# the next labels are taken in blocks. The result is the same.
MAX_STEP_ELEMENTS = 1 << 24


def _label_block(rows: int, n_labels: int, width: int = 1) -> int:
    """How many next labels one step scores at once: all of them unless
    rows * n_labels * width sums per next label would exceed MAX_STEP_ELEMENTS."""
    return max(1, min(n_labels, MAX_STEP_ELEMENTS // max(1, rows * n_labels * width)))


def _viterbi(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
    *,
    mask: Optional[torch.Tensor] = None,
    running: Optional[List[int]] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The Viterbi recursion and batched backtracking, in one of two modes.

    emissions (Tensor): (B, T, K).
    mask (Optional[Tensor]): masked mode: (B, T) bool; every step runs over
        the whole batch and padded steps carry each row's scores and label on.
        No host copy inside the loop (the GPU path).
    running (Optional[List[int]]): compact mode: the rows are ordered by
        descending length and running[t] of them have a token at step t, so
        each step computes that prefix only; finished rows keep their scores.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) and scores (B,).
    """
    B, T, K = emissions.shape
    incoming = transitions.unsqueeze(1)  # shape: (K_prev, 1, K_next)
    into = transitions.t().contiguous()  # row j: the scores of moving into j
    history = emissions.new_empty(T, B, K)  # history[t]: max scores after step t
    buffer = emissions.new_empty(K * B * _label_block(B, K))
    score = start + emissions[:, 0]  # shape: (B, K)
    history[0] = score
    for t in range(1, T):
        n = B if running is None else running[t]
        if n == 0:
            break
        best = _max_plus_step(score[:n], incoming, buffer).add_(emissions[:n, t])
        if mask is not None:
            score = torch.where(mask[:, t, None], best, score)
        else:
            score[:n] = best
        history[t, :n] = score[:n]
    best_score, label = (score + end).max(dim=1)  # shape: (B,)
    paths = torch.empty(T, B, dtype=torch.long, device=emissions.device)
    paths[T - 1] = label
    for t in range(T - 1, 0, -1):
        n = B if running is None else running[t]
        if n:
            # the best predecessor of each running sequence's label at step t
            previous = (history[t - 1, :n] + into.index_select(0, label[:n])).argmax(dim=1)
            if mask is not None:
                label = torch.where(mask[:, t], previous, label)
            else:
                label = torch.cat((previous, label[n:]))
        paths[t - 1] = label
    return paths.t().contiguous(), best_score


def marginals(scores: CRFScores) -> torch.Tensor:
    """Exact per-token label probabilities by the forward-backward algorithm.

    They are the gradient of log Z(x) with respect to the emissions, which
    `log_partition`'s backward pass computes in closed form.

    RETURNS (Tensor): (B, T, K); each real token's row sums to 1, padded rows are 0.
    """
    emissions, mask, transitions, start, end, _ = scores
    with torch.enable_grad():
        leaf = emissions.detach().to(_compute_dtype(emissions)).requires_grad_(True)
        detached = CRFScores(leaf, mask, transitions.detach(), start.detach(), end.detach())
        (probs,) = torch.autograd.grad(log_partition(detached).sum(), leaf)
    return probs


@torch.no_grad()
def nbest_decode(scores: CRFScores, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The k highest-scoring paths of every sequence (k-best Viterbi), batched.

    Each label keeps its k best partial paths; a step ranks, for every next
    label, the K * k extensions and keeps the top k. Padded steps carry the
    lists unchanged, so backtracking (gather, whole batch at once) starts at
    each sequence's own last token.

    k (int): paths per sequence, >= 1.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, k, T) long and their scores
        (B, k) in descending order; a sequence with fewer than k paths has
        -inf scores in the spare places.
    """
    check_scores(scores)
    emissions, mask, transitions, start, end, _ = scores
    dtype = _compute_dtype(emissions)
    B, T, K = emissions.shape
    device = emissions.device
    if T == 0:
        return torch.zeros(B, k, 0, dtype=torch.long, device=device), emissions.new_zeros(B, k, dtype=dtype)
    emissions = emissions.to(dtype)
    transitions = transitions.to(dtype)
    score = emissions.new_full((B, K, k), float("-inf"))  # shape: (B, K, k)
    score[:, :, 0] = start.to(dtype) + emissions[:, 0]
    identity = torch.arange(K * k, device=device).view(1, K, k).expand(B, K, k)
    history = []
    block = _label_block(B, K, k)  # next labels ranked at once (bounded memory)
    for t in range(1, T):
        best = score.new_empty(B, K, k)
        pointer = torch.empty(B, K, k, dtype=torch.long, device=device)
        for first in range(0, K, block):
            n = min(block, K - first)
            # shape: (B, K_prev, n, k) -> (B, n, K_prev * k)
            extended = score.unsqueeze(2) + transitions[:, first : first + n].reshape(1, K, n, 1)
            extended = extended.permute(0, 2, 1, 3).reshape(B, n, K * k)
            best[:, first : first + n], pointer[:, first : first + n] = extended.topk(k, dim=2)
        step_mask = mask[:, t, None, None]
        score = torch.where(step_mask, best + emissions[:, t, :, None], score)
        history.append(torch.where(step_mask, pointer, identity))
    final = (score + end.to(dtype).view(1, K, 1)).reshape(B, K * k)
    best_scores, state = final.topk(min(k, K * k), dim=1)  # shape: (B, k)
    path = [state // k]
    for pointer in reversed(history):
        state = pointer.reshape(B, K * k).gather(1, state)
        path.append(state // k)
    path.reverse()
    paths = torch.stack(path, dim=2)  # shape: (B, k, T)
    best_scores = torch.where(mask[:, :1], best_scores, torch.zeros_like(best_scores))
    return paths, best_scores
