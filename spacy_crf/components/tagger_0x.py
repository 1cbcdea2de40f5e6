"""crf_tagger's 0.x targets and entity settings. Up to 0.3.0 crf_tagger was
the only factory; its targets "morph", "pos+morph", "tag+pos+morph" and
"ents" now belong to crf_morphologizer and crf_ner, and the entity settings
to crf_ner. Configs and pipelines of 0.x (and 1.0's filled crf_tagger
configs, which hold the entity settings) keep training, loading and
predicting: crf_tagger's factory routes them here."""

import warnings
from typing import Any, Callable, Dict, List, Optional

from spacy.tokens import Doc
from thinc.api import Model

from ..errors import Errors, Warnings
from ..ml import CRFBatch
from ..scoring import morphologizer_score, ner_score, tagger_score
from ..targets import TOKEN_TARGETS
from .morphologizer import CRFMorphologizer
from .ner import CRFEntityRecognizer

MOVED_TARGETS = {
    "morph": "crf_morphologizer",
    "pos+morph": "crf_morphologizer",
    "tag+pos+morph": "crf_morphologizer",
    "ents": "crf_ner",
}
# the entity settings of 0.x's crf_tagger, beside the tagger's own in its signature
DEPRECATED_SETTINGS = (
    "store_entity_probs",
    "ents_threshold",
    "candidates_key",
    "candidates_threshold",
    "incorrect_spans_key",
)


def sets_entity_settings(deprecated: Dict[str, Any]) -> bool:
    """Whether any of 0.x's entity settings has other than its default
    (candidates_threshold matters only with candidates_key)."""
    return bool(deprecated.get("store_entity_probs") or deprecated.get("ents_threshold")) or any(
        deprecated.get(key) is not None for key in ("candidates_key", "incorrect_spans_key")
    )


def is_0x(target: str, constraints: str, deprecated: Dict[str, Any]) -> bool:
    """Whether crf_tagger's settings are 0.x's: a target that moved, constraints
    "auto", or an entity setting (`deprecated`: DEPRECATED_SETTINGS' values)."""
    return target not in TOKEN_TARGETS or constraints == "auto" or sets_entity_settings(deprecated)


def crf_tagger_0x(
    nlp: Any,
    name: str,
    model: Model[List[Doc], CRFBatch],
    *,
    tagger_class: Callable[..., Any],
    target: str,
    constraints: str,
    scorer: Optional[Callable],
    store_entity_probs: bool,
    ents_threshold: float,
    candidates_key: Optional[str],
    candidates_threshold: float,
    incorrect_spans_key: Optional[str],
    **common: Any,
) -> Any:
    """What crf_tagger built in 0.x: for a moved target (warning W003) a
    CRFEntityRecognizer ("ents"; constraints "auto" and "none" are BILUO) or
    a CRFMorphologizer, else a CRFTagger (constraints "auto" is "none").
    crf_tagger's own scorer, which scores tags, becomes the new component's;
    another scorer is kept. `tagger_class`: CRFTagger (passed in, so that
    this module needs nothing of tagger.py); `common`: the settings all
    three share."""
    entity_settings = sets_entity_settings(
        dict(
            store_entity_probs=store_entity_probs,
            ents_threshold=ents_threshold,
            candidates_key=candidates_key,
            incorrect_spans_key=incorrect_spans_key,
        )
    )
    if target == "ents":
        warnings.warn(Warnings.W003.format(name=name, target=target, factory="crf_ner"), stacklevel=3)
        return CRFEntityRecognizer(
            nlp.vocab,
            model,
            name,
            scheme="BILUO" if constraints in ("auto", "none") else constraints,
            incorrect_spans_key=incorrect_spans_key,
            store_entity_probs=store_entity_probs,
            threshold=ents_threshold,
            candidates_key=candidates_key,
            candidates_threshold=candidates_threshold,
            scorer=ner_score if scorer is tagger_score else scorer,
            **common,
        )
    if entity_settings:
        raise ValueError(Errors.E020.format(name=name, target=target))
    if target in MOVED_TARGETS:
        warnings.warn(Warnings.W003.format(name=name, target=target, factory=MOVED_TARGETS[target]), stacklevel=3)
        if constraints not in ("none", "auto"):
            raise ValueError(Errors.E037.format(name=name, target=target, constraints=constraints))
        return CRFMorphologizer(
            nlp.vocab,
            model,
            name,
            target=target,
            scorer=morphologizer_score if scorer is tagger_score else scorer,
            **common,
        )
    constraints = "none" if constraints == "auto" else constraints  # 0.x's default: no scheme for tags
    return tagger_class(nlp.vocab, model, name, target=target, constraints=constraints, scorer=scorer, **common)
