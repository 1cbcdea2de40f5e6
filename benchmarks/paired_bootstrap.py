"""Paired bootstrap of entity F1: is system A's F1 on a dev set different from B's?

    from benchmarks.paired_bootstrap import entity_counts, paired_bootstrap
    result = paired_bootstrap(entity_counts(gold_docs, docs_a), entity_counts(gold_docs, docs_b))

Entities match when their start and end characters and label are the gold
entity's (spaCy's ents_f). The docs are resampled with replacement, the same
draw for both systems; each draw's F1 difference is summed from the drawn docs'
true positives, false positives and false negatives (F1 is not an average over
docs). Reported: both F1s, their difference, its 95% percentile interval and a
two-sided p-value: twice the share of draws whose difference is on the far side
of zero (at least 1/samples), the paired bootstrap of Koehn (2004) and of
Berg-Kirkpatrick et al. (2012).
"""

from typing import Dict, List, Sequence

import numpy
from spacy.tokens import Doc


def entity_counts(gold_docs: Sequence[Doc], predicted_docs: Sequence[Doc]) -> numpy.ndarray:
    """(true positives, false positives, false negatives) of each doc, shape (n_docs, 3)."""
    if len(gold_docs) != len(predicted_docs):
        raise ValueError(f"{len(gold_docs)} gold docs against {len(predicted_docs)} predicted")
    rows = []
    for gold, predicted in zip(gold_docs, predicted_docs):
        if gold.text != predicted.text:
            raise ValueError(f"a predicted doc's text differs from its gold doc's: {predicted.text[:40]!r}")
        gold_set = {(e.start_char, e.end_char, e.label_) for e in gold.ents}
        predicted_set = {(e.start_char, e.end_char, e.label_) for e in predicted.ents}
        true_positives = len(gold_set & predicted_set)
        rows.append((true_positives, len(predicted_set) - true_positives, len(gold_set) - true_positives))
    return numpy.asarray(rows, dtype=numpy.int64).reshape(-1, 3)


def f1(counts: numpy.ndarray) -> numpy.ndarray:
    """F1 of summed counts (..., 3); 0 where there is no entity at all."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denominator = 2 * tp + fp + fn
    return numpy.where(denominator > 0, 2 * tp / numpy.maximum(denominator, 1), 0.0)


def precision_recall_f1(counts: numpy.ndarray) -> Dict[str, float]:
    tp, fp, fn = (int(x) for x in counts.sum(axis=0))
    return {
        "p": 100 * tp / (tp + fp) if tp + fp else 0.0,
        "r": 100 * tp / (tp + fn) if tp + fn else 0.0,
        "f": 100 * float(f1(numpy.asarray([tp, fp, fn]))),
    }


def paired_bootstrap(
    counts_a: numpy.ndarray, counts_b: numpy.ndarray, *, samples: int = 10000, seed: int = 0
) -> Dict[str, float]:
    """F1 of A and B (in %), A - B, its 95% interval and the two-sided p-value over doc resamples."""
    if counts_a.shape != counts_b.shape or counts_a.ndim != 2 or counts_a.shape[1] != 3:
        raise ValueError(f"need two (n_docs, 3) count arrays of one shape, got {counts_a.shape} and {counts_b.shape}")
    n_docs = counts_a.shape[0]
    observed = float(f1(counts_a.sum(0)) - f1(counts_b.sum(0)))
    rng = numpy.random.default_rng(seed)
    deltas: List[numpy.ndarray] = []
    for start in range(0, samples, 1000):  # 1000 draws at a time: bounded memory
        draws = rng.integers(0, n_docs, size=(min(1000, samples - start), n_docs))
        deltas.append(f1(counts_a[draws].sum(1)) - f1(counts_b[draws].sum(1)))
    delta = numpy.concatenate(deltas)
    far_side = numpy.mean(delta <= 0) if observed > 0 else numpy.mean(delta >= 0)
    low, high = numpy.percentile(delta, [2.5, 97.5])
    return {
        "f1_a": round(100 * float(f1(counts_a.sum(0))), 2),
        "f1_b": round(100 * float(f1(counts_b.sum(0))), 2),
        "delta": round(100 * observed, 2),
        "delta_95_low": round(100 * float(low), 2),
        "delta_95_high": round(100 * float(high), 2),
        "p_value": round(float(min(1.0, max(2 * far_side, 1 / samples))), 4),
        "docs": n_docs,
        "samples": samples,
    }
