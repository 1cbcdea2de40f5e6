"""The CPU Viterbi as fused loops compiled by Numba: full and factored transitions.

numpy and Numba, no torch, no spaCy: the torch path
(spacy_crf/nn/kernels/numba_viterbi.py, which says how the loops work and
what they equal) and the torch-free engine (viterbi.py) run these kernels. Emissions are
held as rows: row b's step t is em[step_starts[t] + ranks[b]]. One thread;
the compiled code is cached on disk (`cache=True`): the first process
compiles (one to two seconds), later ones load it (about half a second).
"""

import numba
import numpy


@numba.njit(cache=True, nogil=True, inline="always")
def _finish(score, end, best, b, length):  # pragma: no cover - compiled
    """The best last label of row b; its score into best[b] (0 if empty)."""
    top = -numpy.inf
    label = 0
    for j in range(score.shape[0]):
        v = score[j] + end[j]
        if v > top:
            top = v
            label = j
    best[b] = top if length > 0 else 0.0
    return label


@numba.njit(cache=True, nogil=True)
def full_kernel(em, step_starts, ranks, lengths, transitions, start, end, paths, best):  # pragma: no cover
    # Each step's best scores are kept (alpha), not backpointers: going back,
    # a step's best predecessor is found again as the first i with the best
    # alpha[t - 1, i] + transitions[i, label], the same sums as going
    # forward, so the same label as a kept pointer. Without the pointers the
    # forward loop is a branch-free max over j that LLVM vectorizes.
    B, T = paths.shape
    K = em.shape[1]
    K8 = K - K % 8
    alpha = numpy.empty((T, K), dtype=start.dtype)
    candidate = numpy.empty_like(start)
    for b in range(B):
        length = max(lengths[b], 1)  # an empty row is decoded as one step, its score 0
        for j in range(K):
            alpha[0, j] = start[j] + em[step_starts[0] + ranks[b], j]
        for t in range(1, length):
            row = step_starts[t] + ranks[b]
            for j in range(K):
                candidate[j] = -numpy.inf
            # eight predecessors a pass over j, folded in label order (the
            # same max as one at a time): the running max stays in a register
            # for eight of them instead of a load and a store each (LLVM
            # unrolls the loop over k; `python -m benchmarks.cpu_viterbi`
            # measures it, docs/design.md)
            for i in range(0, K8, 8):
                for j in range(K):
                    c = candidate[j]
                    for k in range(8):
                        v = alpha[t - 1, i + k] + transitions[i + k, j]
                        c = v if v > c else c
                    candidate[j] = c
            for i in range(K8, K):
                s = alpha[t - 1, i]
                for j in range(K):
                    v = s + transitions[i, j]
                    c = candidate[j]
                    candidate[j] = v if v > c else c
            for j in range(K):
                alpha[t, j] = candidate[j] + em[row, j]
        label = _finish(alpha[length - 1], end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            top = -numpy.inf
            chosen = 0  # 0 where nothing compares (NaN), as a pointer never set
            for i in range(K):
                v = alpha[t - 1, i] + transitions[i, label]
                if v > top:
                    top = v
                    chosen = i
            label = chosen
            paths[b, t - 1] = label


@numba.njit(cache=True, nogil=True)
def factored_kernel(
    em, step_starts, ranks, lengths, leave, pair, enter, classes, members, offsets, start, end, paths, best
):  # pragma: no cover - compiled
    B, T = paths.shape
    K = em.shape[1]
    C = pair.shape[0]
    score = numpy.empty_like(start)
    into = numpy.empty_like(pair[0])  # the best move into each class
    # kept for going back: each label's score + leave, and its best in each class
    leaving = numpy.empty((T, K), dtype=start.dtype)
    in_class = numpy.empty((T, C), dtype=start.dtype)
    for b in range(B):
        length = max(lengths[b], 1)
        for j in range(K):
            score[j] = start[j] + em[step_starts[0] + ranks[b], j]
        for t in range(1, length):
            row = step_starts[t] + ranks[b]
            for c in range(C):
                in_class[t, c] = -numpy.inf
            for i in range(K):
                v = score[i] + leave[i]
                leaving[t, i] = v
                c = classes[i]
                if v > in_class[t, c]:
                    in_class[t, c] = v
            for c in range(C):
                m = -numpy.inf
                for p in range(C):
                    v = in_class[t, p] + pair[p, c]
                    if v > m:
                        m = v
                into[c] = m
            for j in range(K):
                score[j] = into[classes[j]] + enter[j] + em[row, j]
        label = _finish(score, end, best, b, lengths[b])
        for t in range(length - 1, T):
            paths[b, t] = label
        for t in range(length - 1, 0, -1):
            # torch's choice (factored.py): the first label i with the best
            # leaving[i] + Q[class(i), c]. That best is the best over classes p
            # of in_class[p] + Q[p, c], and only the classes that reach it
            # hold such labels: their labels are searched, in label order.
            c = classes[label]
            top = -numpy.inf
            for p in range(C):
                v = in_class[t, p] + pair[p, c]
                if v > top:
                    top = v
            chosen = K
            for p in range(C):
                if in_class[t, p] + pair[p, c] == top:
                    for k in range(offsets[p], offsets[p + 1]):
                        i = members[k]
                        if i >= chosen:
                            break
                        if leaving[t, i] + pair[p, c] == top:
                            chosen = i
                            break
            label = chosen if chosen < K else 0  # 0 where nothing compares (NaN), as argmax of -inf
            paths[b, t - 1] = label
