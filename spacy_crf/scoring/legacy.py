"""0.x's crf_tagger scorers, kept so that configs and pipelines of earlier
versions keep loading (a registered name never changes):
crf_tagger_scorer.v1/.v2 -> tagger_scorer.v1, morphologizer_scorer.v1 and
ner_scorer.v1 (one per component, with .v2's calibration keys)."""

from typing import Any, Callable, Dict, Iterable

from spacy.scorer import get_ner_prf
from spacy.training import Example
from spacy.util import registry

from ..targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget, Target
from .calibration import calibration_scores
from .scorers import morph_scores, token_scores


def crf_tagger_score(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """The scores of 0.x's crf_tagger for its target: those of tagger_scorer.v1,
    morphologizer_scorer.v1 or (target "ents") ner_scorer.v1, without calibration keys."""
    if target == "ents":
        return get_ner_prf(examples)
    if target in MORPH_TARGETS:
        return morph_scores(examples, target=target, **kwargs)
    return token_scores(examples, target=target, **kwargs)


def crf_tagger_score_v2(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """`crf_tagger_score` plus the calibration keys of the probabilities stored."""
    examples = list(examples)
    scores = crf_tagger_score(examples, target=target, **kwargs)
    if target == "ents":
        scheme = kwargs.get("scheme") or kwargs.get("constraints", "auto")
        kind: Target = EntityTarget("BILUO" if scheme in ("auto", None) else scheme)
    else:
        kind = {**TOKEN_TARGETS, **MORPH_TARGETS}[target]
    scores.update(calibration_scores(examples, kind))
    return scores


@registry.scorers("spacy_crf.crf_tagger_scorer.v1")
def make_crf_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return crf_tagger_score


@registry.scorers("spacy_crf.crf_tagger_scorer.v2")
def make_crf_tagger_scorer_v2() -> Callable[..., Dict[str, Any]]:
    """`.v1` plus confidence_ece/_brier and ents_prob_ece/_brier where the
    predicted docs carry probabilities."""
    return crf_tagger_score_v2
