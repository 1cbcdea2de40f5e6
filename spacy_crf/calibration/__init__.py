"""How far the component's probabilities can be trusted: metrics.py measures
them (ECE, Brier score, reliability bins), scores.py adds those measures to a
scorer's output, temperature.py fits the temperature that calibrates them
(`python -m spacy_crf calibrate`)."""

from .metrics import (
    N_BINS,
    Outcomes,
    ReliabilityBins,
    brier_score,
    entity_outcomes,
    expected_calibration_error,
    reliability_bins,
    sampling_ece,
    token_outcomes,
)

__all__ = [
    "N_BINS",
    "Outcomes",
    "ReliabilityBins",
    "brier_score",
    "entity_outcomes",
    "expected_calibration_error",
    "reliability_bins",
    "sampling_ece",
    "token_outcomes",
]
