"""The scorers of the components, as spaCy's: token accuracy of what
crf_tagger and crf_morphologizer write, entity P/R/F of crf_ner; each adds the
calibration of the probabilities the component stored (store_confidence,
store_entity_probs), where the predicted docs carry them."""

from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from spacy.scorer import Scorer, get_ner_prf
from spacy.tokens import Token
from spacy.training import Example
from spacy.util import registry

from ..targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget
from ..typed_api import morph_key
from .calibration import calibration_scores


def token_scores(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """tag_acc ("tag"), pos_acc ("pos") or both ("tag+pos")."""
    examples = list(examples)
    scores: Dict[str, Any] = {}
    if target in ("tag", "tag+pos"):
        scores.update(Scorer.score_token_attr(examples, "tag", **kwargs))
    if target in ("pos", "tag+pos"):
        scores.update(Scorer.score_token_attr(examples, "pos", **kwargs))
    return scores


def morph_scores(examples: Iterable[Example], *, target: str = "pos+morph", **kwargs: Any) -> Dict[str, Any]:
    """morph_acc, morph_micro_p/r/f and morph_per_feat (as spaCy's
    morphologizer scores them); with "pos+morph" also pos_acc and
    pos_morph_acc (UPOS and every feature right); with "tag+pos+morph" those
    and tag_acc and tag_pos_morph_acc (UDPipe's AllTags)."""
    examples = list(examples)
    scores: Dict[str, Any] = {}
    if target == "tag+pos+morph":
        scores.update(Scorer.score_token_attr(examples, "tag", **kwargs))
    if target != "morph":
        scores.update(Scorer.score_token_attr(examples, "pos", **kwargs))
    scores.update(Scorer.score_token_attr(examples, "morph", getter=_morph_key, **kwargs))
    scores.update(Scorer.score_token_attr_per_feat(examples, "morph", getter=_morph_key, **kwargs))
    if target != "morph":
        scores.update(Scorer.score_token_attr(examples, "pos_morph", getter=_pos_and_morph, **kwargs))
    if target == "tag+pos+morph":
        scores.update(Scorer.score_token_attr(examples, "tag_pos_morph", getter=_tag_pos_and_morph, **kwargs))
    return scores


def _morph_key(token: Token, attr: str) -> int:
    """The morph's hash, 0 where unset (spaCy's morphologizer scorer's getter)."""
    return getattr(token, attr).key


def _pos_and_morph(token: Token, attr: str) -> Optional[Tuple[int, int]]:
    """The token's (pos, morph key), None (missing) where either is unset."""
    if not token.pos or not morph_key(token.morph):
        return None
    return token.pos, morph_key(token.morph)


def _tag_pos_and_morph(token: Token, attr: str) -> Optional[Tuple[int, int, int]]:
    """The token's (tag, pos, morph key), None (missing) where any is unset."""
    if not token.tag or not token.pos or not morph_key(token.morph):
        return None
    return token.tag, token.pos, morph_key(token.morph)


def tagger_score(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """crf_tagger's scores: `token_scores` and `calibration_scores`.

    examples (Iterable[Example]): the predicted and gold docs.
    target (str): the component's target (from its cfg).
    RETURNS (Dict[str, Any]): e.g. {"tag_acc": 0.95}.
    """
    examples = list(examples)
    scores = token_scores(examples, target=target, **kwargs)
    scores.update(calibration_scores(examples, TOKEN_TARGETS[target]))
    return scores


def morphologizer_score(examples: Iterable[Example], *, target: str = "pos+morph", **kwargs: Any) -> Dict[str, Any]:
    """crf_morphologizer's scores: `morph_scores` and `calibration_scores`.

    examples (Iterable[Example]): the predicted and gold docs.
    target (str): the component's target (from its cfg).
    RETURNS (Dict[str, Any]): e.g. {"pos_acc": 0.97, "morph_acc": 0.96, ...}.
    """
    examples = list(examples)
    scores = morph_scores(examples, target=target, **kwargs)
    scores.update(calibration_scores(examples, MORPH_TARGETS[target]))
    return scores


def ner_score(examples: Iterable[Example], *, scheme: str = "BILUO", **kwargs: Any) -> Dict[str, Any]:
    """crf_ner's scores: ents_p/r/f and ents_per_type (spaCy's
    `get_ner_prf`) and `calibration_scores`.

    examples (Iterable[Example]): the predicted and gold docs.
    scheme (str): the component's tag scheme (from its cfg).
    RETURNS (Dict[str, Any]): e.g. {"ents_f": 0.81, "ents_p": 0.83, ...}.
    """
    examples = list(examples)
    scores = get_ner_prf(examples)
    scores.update(calibration_scores(examples, EntityTarget(scheme)))
    return scores


@registry.scorers("spacy_crf.tagger_scorer.v1")
def make_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return tagger_score


@registry.scorers("spacy_crf.morphologizer_scorer.v1")
def make_morphologizer_scorer() -> Callable[..., Dict[str, Any]]:
    return morphologizer_score


@registry.scorers("spacy_crf.ner_scorer.v1")
def make_ner_scorer() -> Callable[..., Dict[str, Any]]:
    return ner_score
