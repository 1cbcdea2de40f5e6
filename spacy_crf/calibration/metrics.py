"""How well calibrated probabilities are: reliability bins, the expected
calibration error (ECE) and the Brier score, and the outcomes they are
computed from.

A prediction is a probability p in [0, 1] that it is right (a token's
marginal probability of its predicted label, an entity's posterior) and
whether it was. With the predictions cut into equal-width bins of p,

    ECE   = sum over bins b of (n_b / N) * |accuracy(b) - mean p(b)|
    Brier = (1 / N) * sum over predictions of (p - right)^2

with right = 1 or 0; both are 0 for a perfectly calibrated and sharp model.
Bin b of n holds (b / n, (b + 1) / n], and bin 0 holds p = 0 too (Guo et al.
2017, "On Calibration of Modern Neural Networks", uses 15 bins).

The metrics are pure numpy. `token_outcomes` and `entity_outcomes` say which
predictions of a doc were right against an Example's gold annotation (the
scorers and the calibration job `spacy_crf.calibrate` use them); no torch here.
"""

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.training import Example

# per prediction, its probability and whether it was right: lists or numpy arrays
Probabilities = Union[Sequence[float], numpy.ndarray]
Rights = Union[Sequence[bool], numpy.ndarray]

# the bins of ECE and of the reliability diagram
N_BINS = 15
# float32 forward-backward marginals, exp(alpha + beta - log Z) with scores in
# the hundreds, can pass 1 by about 1e-4: such values are clipped, not refused
_TOLERANCE = 1e-3


@dataclass
class Outcomes:
    """Predictions' probabilities and whether each was right.

    probs (numpy.ndarray): float64 (N,), each in [0, 1].
    right (numpy.ndarray): bool (N,).
    """

    probs: numpy.ndarray
    right: numpy.ndarray

    @classmethod
    def join(cls, parts: Iterable["Outcomes"]) -> "Outcomes":
        """The outcomes of all parts, in order."""
        parts = list(parts)
        if not parts:
            return cls(numpy.zeros((0,)), numpy.zeros((0,), dtype=bool))
        return cls(numpy.concatenate([p.probs for p in parts]), numpy.concatenate([p.right for p in parts]))

    def __len__(self) -> int:
        return len(self.probs)

    def metrics(self, n_bins: int = N_BINS) -> Dict[str, Optional[float]]:
        """RETURNS (Dict[str, Optional[float]]): "ece", "brier" and "accuracy"
        (the share right), None for no predictions."""
        if not len(self):
            return {"ece": None, "brier": None, "accuracy": None}
        return {
            "ece": expected_calibration_error(self.probs, self.right, n_bins=n_bins),
            "brier": brier_score(self.probs, self.right),
            "accuracy": float(self.right.mean()),
        }


@dataclass
class ReliabilityBins:
    """Predictions grouped by probability, for ECE and a reliability diagram.

    edges (numpy.ndarray): (n_bins + 1,) the bins' edges, 0 to 1.
    counts (numpy.ndarray): int64 (n_bins,) predictions per bin.
    confidence (numpy.ndarray): (n_bins,) their mean probability, NaN where
        the bin is empty.
    accuracy (numpy.ndarray): (n_bins,) the share of them that was right,
        NaN where the bin is empty.
    """

    edges: numpy.ndarray
    counts: numpy.ndarray
    confidence: numpy.ndarray
    accuracy: numpy.ndarray

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able lists; an empty bin's confidence and accuracy are None."""

        def listed(values: numpy.ndarray) -> List[Optional[float]]:
            return [None if numpy.isnan(v) else float(v) for v in values.tolist()]

        return {
            "edges": self.edges.tolist(),
            "counts": self.counts.tolist(),
            "confidence": listed(self.confidence),
            "accuracy": listed(self.accuracy),
        }


def _checked(probs: Probabilities, right: Rights) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """float64 probabilities clipped to [0, 1] and bool outcomes, or
    ValueError if they differ in length, or a probability is NaN or off
    [0, 1] by more than float32 rounding (_TOLERANCE)."""
    p = numpy.asarray(probs, dtype="float64").reshape(-1)
    r = numpy.asarray(right).reshape(-1)
    if p.shape != r.shape:
        raise ValueError(f"probabilities and outcomes differ in length: {p.shape[0]} and {r.shape[0]}")
    bad = numpy.isnan(p) | (p < -_TOLERANCE) | (p > 1 + _TOLERANCE)
    if bad.any():
        raise ValueError(f"probabilities must be in [0, 1], got {p[bad][0]!r}")
    return numpy.clip(p, 0.0, 1.0), r.astype(bool)


def _bin_index(p: numpy.ndarray, n_bins: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The n_bins + 1 edges of equal-width bins and each probability's bin:
    bin b holds (edges[b], edges[b + 1]]; 0 goes to bin 0."""
    edges = numpy.linspace(0.0, 1.0, n_bins + 1)
    return edges, numpy.clip(numpy.searchsorted(edges, p, side="left") - 1, 0, n_bins - 1)


def reliability_bins(probs: Probabilities, right: Rights, n_bins: int = N_BINS) -> ReliabilityBins:
    """Group predictions into n_bins equal-width bins of probability.

    probs (Sequence[float]): each prediction's probability, in [0, 1].
    right (Sequence[bool]): whether each was right.
    n_bins (int): the number of bins, >= 1.
    RETURNS (ReliabilityBins): counts, mean probability and accuracy per bin.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    p, r = _checked(probs, right)
    edges, index = _bin_index(p, n_bins)
    counts = numpy.bincount(index, minlength=n_bins).astype("int64")
    sums = numpy.bincount(index, weights=p, minlength=n_bins)
    hits = numpy.bincount(index, weights=r.astype("float64"), minlength=n_bins)
    with numpy.errstate(invalid="ignore", divide="ignore"):
        confidence = numpy.where(counts > 0, sums / counts, numpy.nan)
        accuracy = numpy.where(counts > 0, hits / counts, numpy.nan)
    return ReliabilityBins(edges, counts, confidence, accuracy)


def expected_calibration_error(probs: Probabilities, right: Rights, n_bins: int = N_BINS) -> float:
    """The expected calibration error: the mean over the bins, weighted by
    their share of the predictions, of |accuracy - mean probability|.

    probs (Sequence[float]): each prediction's probability, in [0, 1].
    right (Sequence[bool]): whether each was right.
    n_bins (int): equal-width bins of probability (15 by default).
    RETURNS (float): in [0, 1]; NaN for no predictions.
    """
    bins = reliability_bins(probs, right, n_bins=n_bins)
    total = int(bins.counts.sum())
    if not total:
        return float("nan")
    full = bins.counts > 0
    gaps = numpy.abs(bins.accuracy[full] - bins.confidence[full])
    return float((bins.counts[full] * gaps).sum() / total)


def sampling_ece(probs: Sequence[float], n_bins: int = N_BINS, draws: int = 200, seed: int = 0) -> float:
    """The ECE that sampling alone gives: the mean ECE of a perfectly
    calibrated predictor with these probabilities, each prediction drawn
    right with its probability, over `draws` draws. An ECE measured on this
    many predictions cannot be told from calibrated below about this value.

    probs (Sequence[float]): each prediction's probability, in [0, 1].
    n_bins (int): equal-width bins of probability (15 by default).
    draws (int): sets of outcomes drawn.
    seed (int): the random generator's seed (the result is reproducible).
    RETURNS (float): in [0, 1]; NaN for no predictions.
    """
    p, _ = _checked(probs, numpy.zeros(len(probs), dtype=bool))
    if not len(p):
        return float("nan")
    # the bins and their mean probabilities do not depend on the outcomes:
    # bin once, then count the right predictions of every draw per bin at once
    _, index = _bin_index(p, n_bins)
    counts = numpy.bincount(index, minlength=n_bins)
    full = counts > 0
    confidence = numpy.bincount(index, weights=p, minlength=n_bins)[full] / counts[full]
    rights = numpy.random.default_rng(seed).random((draws, len(p))) < p  # (draws, n)
    hits = rights.astype("float64") @ numpy.eye(n_bins)[index][:, full]  # (draws, full bins)
    gaps = numpy.abs(hits / counts[full] - confidence)
    return float((gaps @ counts[full]).mean() / len(p))


def brier_score(probs: Probabilities, right: Rights) -> float:
    """The Brier score of binary outcomes: the mean of (p - right)^2.

    probs (Sequence[float]): each prediction's probability, in [0, 1].
    right (Sequence[bool]): whether each was right.
    RETURNS (float): in [0, 1]; NaN for no predictions.
    """
    p, r = _checked(probs, right)
    if not len(p):
        return float("nan")
    return float(numpy.mean((p - r) ** 2))


def token_outcomes(probs: Sequence[Optional[float]], predicted: Sequence[str], gold: Sequence[str]) -> Outcomes:
    """Which tokens' predicted labels were right, with their probabilities.

    A token counts where it has a probability and a gold label: not where
    the gold is unknown ("", missing or misaligned) or only a negative
    label ("!L"). A gold label the model does not know is a wrong prediction.

    probs (Sequence[Optional[float]]): per token, the probability of its
        predicted label (token._.crf_confidence), None for none.
    predicted (Sequence[str]): per token, the predicted label (a target's
        `predicted_values`).
    gold (Sequence[str]): per token, the gold label (a target's `gold_values`).
    RETURNS (Outcomes): one per counted token, in token order.
    """
    kept = [
        (p, label == value)
        for p, label, value in zip(probs, predicted, gold)
        if p is not None and value and not value.startswith("!")
    ]
    return Outcomes(
        numpy.asarray([p for p, _ in kept], dtype="float64"), numpy.asarray([r for _, r in kept], dtype=bool)
    )


def entity_outcomes(example: Example, spans: Iterable[Tuple[int, int, str, float]]) -> Outcomes:
    """Which predicted entities are exactly a gold entity (same tokens, same
    label), with their probabilities, judged as spaCy's NER scorer
    (`spacy.scorer.get_ner_prf`) judges them.

    A doc without gold entity annotation counts no entity, nor does an
    entity that is not aligned to gold tokens or that covers a gold token
    whose entity annotation is missing: such a prediction is neither right
    nor wrong.

    example (Example): the predicted doc (whose tokens the spans index) and
        the gold doc.
    spans (Iterable[Tuple[int, int, str, float]]): the predicted entities,
        (start, end exclusive, label, probability) in predicted tokens.
    RETURNS (Outcomes): one per counted entity, in the order given.
    """
    gold_doc = example.reference
    if not gold_doc.has_annotation("ENT_IOB"):
        return Outcomes.join([])
    golds = {(ent.label_, ent.start, ent.end) for ent in gold_doc.ents}
    x2y = example.alignment.x2y
    probs, right = [], []
    for start, end, label, prob in spans:
        indices = x2y[start:end]
        if not len(indices):
            continue
        first, last = int(indices[0]), int(indices[-1])
        if any(token.ent_iob == 0 for token in gold_doc[first : last + 1]):
            continue
        probs.append(prob)
        right.append((label, first, last + 1) in golds)
    return Outcomes(numpy.asarray(probs, dtype="float64"), numpy.asarray(right, dtype=bool))
