"""The components' scorers (scorers.py), the calibration keys they add
(calibration.py) and 0.x's crf_tagger scorers (legacy.py)."""

from . import legacy  # noqa: F401  (registers the superseded versions)
from .scorers import (
    make_morphologizer_scorer,
    make_ner_scorer,
    make_tagger_scorer,
    morph_scores,
    morphologizer_score,
    ner_score,
    tagger_score,
    token_scores,
)

__all__ = [
    "make_morphologizer_scorer",
    "make_ner_scorer",
    "make_tagger_scorer",
    "morph_scores",
    "morphologizer_score",
    "ner_score",
    "tagger_score",
    "token_scores",
]
