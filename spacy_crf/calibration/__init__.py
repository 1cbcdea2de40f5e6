"""How far the component's probabilities can be trusted: metrics.py measures
them (ECE, Brier score, reliability bins), temperature.py fits the
temperature that calibrates them (the job that loads and saves a pipeline
for it, `python -m spacy_crf calibrate`, is `spacy_crf.calibrate`)."""

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
