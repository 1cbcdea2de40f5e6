"""Scorers of crf_tagger: token accuracy of the attribute it writes (or
entity P/R/F), and with `.v2` the calibration of the probabilities it stored."""
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from spacy.scorer import Scorer, get_ner_prf
from spacy.tokens import Span, Token
from spacy.training import Example
from spacy.util import registry

from .calibration import N_BINS, Outcomes, entity_outcomes, token_outcomes
from .targets import TARGETS

TARGET_ATTRS = {"tag": "tag", "pos": "pos"}


def crf_tagger_score(
    examples: Iterable[Example], *, target: str = "tag", **kwargs: Any
) -> Dict[str, Any]:
    """Score tag_acc (target "tag"), pos_acc ("pos"), both ("tag+pos"),
    morph_acc, morph_micro_p/r/f and morph_per_feat ("morph", as spaCy's
    morphologizer scores them), those and pos_acc and pos_morph_acc
    ("pos+morph"), those and tag_acc and tag_pos_morph_acc (tag, UPOS and
    every feature right: UDPipe's AllTags; "tag+pos+morph") or ents_p/r/f
    ("ents").

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
    if target in ("morph", "pos+morph", "tag+pos+morph"):
        examples = list(examples)
        scores = {}
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


def _tag_pos_and_morph(token: Token, attr: str) -> Optional[Tuple[int, int, int]]:
    """The token's (tag, pos, morph key), None (missing) where any is unset:
    UDPipe's AllTags, for tag_pos_morph_acc."""
    if not token.tag or not token.pos or not token.morph.key:
        return None
    return token.tag, token.pos, token.morph.key


def crf_tagger_score_v2(
    examples: Iterable[Example], *, target: str = "tag", **kwargs: Any
) -> Dict[str, Any]:
    """`crf_tagger_score` (the same keys and values), plus the calibration of
    the probabilities the component stored, where the predicted docs carry
    them:

    - confidence_ece, confidence_brier: with store_confidence, the expected
      calibration error (15 equal-width bins) and Brier score of
      token._.crf_confidence, the probability of each token's predicted
      label, against whether it equals the gold label (tokens with a gold
      label only);
    - ents_prob_ece, ents_prob_brier: target "ents" with store_entity_probs,
      those of span._.crf_prob of each predicted entity against whether
      exactly that span and label is a gold entity (judged as ents_p is).

    Keys whose probabilities no predicted doc carries are left out; a key
    is None where no prediction could be judged. See spacy_crf.calibration.

    examples (Iterable[Example]): the predicted and gold docs.
    target (str): the attribute the component writes.
    RETURNS (Dict[str, Any]): e.g. {"tag_acc": 0.95, "confidence_ece": 0.02,
        "confidence_brier": 0.04}.
    """
    examples = list(examples)
    scores = crf_tagger_score(examples, target=target, **kwargs)
    scores.update(calibration_scores(examples, target=target, constraints=kwargs.get("constraints", "auto")))
    return scores


def calibration_scores(
    examples: Iterable[Example], *, target: str = "tag", constraints: str = "auto"
) -> Dict[str, Optional[float]]:
    """The calibration keys of `crf_tagger_score_v2` alone.

    examples (Iterable[Example]): the predicted and gold docs.
    target (str): the attribute the component writes.
    constraints (str): the component's setting: the tag scheme of target
        "ents" ("auto" is BILUO).
    RETURNS (Dict[str, Optional[float]]): confidence_ece/_brier where a
        predicted token has token._.crf_confidence, ents_prob_ece/_brier
        where a predicted entity has span._.crf_prob; else nothing.
    """
    scheme = "BILUO" if constraints == "auto" else constraints  # read by target "ents" only
    tokens: List[Outcomes] = []
    entities: List[Outcomes] = []
    has_confidence = has_probs = False
    read_confidence = Token.has_extension("crf_confidence")
    read_probs = target == "ents" and Span.has_extension("crf_prob")
    for eg in examples:
        doc = eg.predicted
        if read_confidence:
            probs = [token._.crf_confidence for token in doc]
            if any(p is not None for p in probs):
                has_confidence = True
                predicted = TARGETS[target].predicted_values(doc, scheme)
                tokens.append(token_outcomes(probs, predicted, TARGETS[target].gold_values(eg, scheme)))
        if read_probs:
            spans = [(ent.start, ent.end, ent.label_, ent._.crf_prob) for ent in doc.ents]
            spans = [span for span in spans if span[3] is not None]
            if spans:
                has_probs = True
                entities.append(entity_outcomes(eg, spans))
    scores: Dict[str, Optional[float]] = {}
    if has_confidence:
        metrics = Outcomes.join(tokens).metrics(N_BINS)
        scores.update(confidence_ece=metrics["ece"], confidence_brier=metrics["brier"])
    if has_probs:
        metrics = Outcomes.join(entities).metrics(N_BINS)
        scores.update(ents_prob_ece=metrics["ece"], ents_prob_brier=metrics["brier"])
    return scores


@registry.scorers("spacy_crf.crf_tagger_scorer.v1")
def make_crf_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return crf_tagger_score


@registry.scorers("spacy_crf.crf_tagger_scorer.v2")
def make_crf_tagger_scorer_v2() -> Callable[..., Dict[str, Any]]:
    """`.v1` plus confidence_ece/_brier and ents_prob_ece/_brier where the
    predicted docs carry probabilities (store_confidence, store_entity_probs)."""
    return crf_tagger_score_v2
