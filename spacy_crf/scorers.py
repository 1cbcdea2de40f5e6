"""Scorer of crf_tagger: token accuracy of the attribute it writes."""
from typing import Any, Callable, Dict, Iterable

from spacy.scorer import Scorer, get_ner_prf
from spacy.training import Example
from spacy.util import registry

TARGET_ATTRS = {"tag": "tag", "pos": "pos"}


def crf_tagger_score(
    examples: Iterable[Example], *, target: str = "tag", **kwargs: Any
) -> Dict[str, Any]:
    """Score tag_acc (target "tag"), pos_acc ("pos"), both ("tag+pos") or
    ents_p/r/f ("ents").

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
    return Scorer.score_token_attr(examples, TARGET_ATTRS[target], **kwargs)


@registry.scorers("spacy_crf.crf_tagger_scorer.v1")
def make_crf_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return crf_tagger_score
