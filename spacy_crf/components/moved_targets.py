"""crf_tagger's 0.x targets "morph", "pos+morph", "tag+pos+morph" and "ents":
the component of the factory that has them now, built from crf_tagger's
settings, so that configs and pipelines of 0.x train, load and predict as before."""
from typing import Any, Callable, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Model

from ..errors import Errors
from ..ml import CRFBatch
from ..scorers import morphologizer_score, ner_score, tagger_score
from .base import CRFComponent
from .morphologizer import CRFMorphologizer
from .ner import CRFEntityRecognizer


def make_moved_target(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    *,
    target: str,
    constraints: str,
    scorer: Optional[Callable],
    store_entity_probs: bool,
    ents_threshold: float,
    candidates_key: Optional[str],
    candidates_threshold: float,
    incorrect_spans_key: Optional[str],
    **common: Any,
) -> CRFComponent:
    """A CRFEntityRecognizer for target "ents" (constraints "auto", and
    crf_tagger's default "none", are BILUO), else a CRFMorphologizer;
    `common`: the settings all share. crf_tagger's own scorer, which scores
    tags, becomes the new component's (entities, morphology); another scorer
    is kept."""
    if scorer is tagger_score:
        scorer = ner_score if target == "ents" else morphologizer_score
    if target == "ents":
        return CRFEntityRecognizer(
            nlp.vocab, model, name, scheme="BILUO" if constraints in ("auto", "none") else constraints,
            incorrect_spans_key=incorrect_spans_key, store_entity_probs=store_entity_probs,
            threshold=ents_threshold, candidates_key=candidates_key, candidates_threshold=candidates_threshold,
            scorer=scorer, **common,
        )
    if store_entity_probs or ents_threshold or candidates_key is not None or incorrect_spans_key is not None:
        raise ValueError(Errors.E020.format(name=name, target=target))
    if constraints not in ("none", "auto"):
        raise ValueError(Errors.E037.format(name=name, target=target, constraints=constraints))
    return CRFMorphologizer(nlp.vocab, model, name, target=target, scorer=scorer, **common)
