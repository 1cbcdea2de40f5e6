"""Scorer of crf_tagger: token accuracy of the attribute it writes."""
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from spacy.scorer import Scorer, get_ner_prf
from spacy.tokens import Token
from spacy.training import Example
from spacy.util import registry

TARGET_ATTRS = {"tag": "tag", "pos": "pos"}


def crf_tagger_score(
    examples: Iterable[Example], *, target: str = "tag", **kwargs: Any
) -> Dict[str, Any]:
    """Score tag_acc (target "tag"), pos_acc ("pos"), both ("tag+pos"),
    morph_acc, morph_micro_p/r/f and morph_per_feat ("morph", as spaCy's
    morphologizer scores them), those and pos_acc and pos_morph_acc
    ("pos+morph") or ents_p/r/f ("ents").

    examples (Iterable[Example]): the predicted and gold docs.
    target (str): the attribute the component writes.
    RETURNS (Dict[str, Any]): e.g. {"tag_acc": 0.95}.
    """
    if target == "ents":
        return get_ner_prf(examples)
    if target == "tag+pos":
        examples = list(examples)
        scores = Scorer.score_token_attr(examples, "tag", **kwargs)
        scores.update(Scorer.score_token_attr(examples, "pos", **kwargs))
        return scores
    if target in ("morph", "pos+morph"):
        examples = list(examples)
        scores = {}
        if target == "pos+morph":
            scores.update(Scorer.score_token_attr(examples, "pos", **kwargs))
        scores.update(Scorer.score_token_attr(examples, "morph", getter=_morph_key, **kwargs))
        scores.update(Scorer.score_token_attr_per_feat(examples, "morph", getter=_morph_key, **kwargs))
        if target == "pos+morph":
            scores.update(Scorer.score_token_attr(examples, "pos_morph", getter=_pos_and_morph, **kwargs))
        return scores
    return Scorer.score_token_attr(examples, TARGET_ATTRS[target], **kwargs)


def _morph_key(token: Token, attr: str) -> int:
    """The morph's hash, 0 where unset (spaCy's morphologizer scorer's getter)."""
    return getattr(token, attr).key


def _pos_and_morph(token: Token, attr: str) -> Optional[Tuple[int, int]]:
    """The token's (pos, morph key), None (missing) where either is unset:
    the whole bundle, for pos_morph_acc."""
    if not token.pos or not token.morph.key:
        return None
    return token.pos, token.morph.key


@registry.scorers("spacy_crf.crf_tagger_scorer.v1")
def make_crf_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return crf_tagger_score
