"""crf_tagger's 0.x targets and entity settings. Up to 0.3.0 crf_tagger was
the only factory; its targets "morph", "pos+morph", "tag+pos+morph" and
"ents" now belong to crf_morphologizer and crf_ner, and the entity settings
to crf_ner. Configs and pipelines of 0.x (and 1.0's filled crf_tagger
configs, which hold the entity settings) keep training, loading and
predicting: crf_tagger's factory routes them here."""

import warnings
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Model

from ..errors import Errors, Warnings
from ..ml import CRFBatch
from ..scoring import morphologizer_score, ner_score, tagger_score
from ..targets import TOKEN_TARGETS
from .base import CRFComponent
from .morphologizer import CRFMorphologizer
from .ner import CRFEntityRecognizer

MOVED_TARGETS = {
    "morph": "crf_morphologizer",
    "pos+morph": "crf_morphologizer",
    "tag+pos+morph": "crf_morphologizer",
    "ents": "crf_ner",
}


class EntitySettings0x(NamedTuple):
    """The values of 0.x's entity settings of crf_tagger (`TAGGER_0X_SETTINGS`)."""

    store_entity_probs: bool
    ents_threshold: float
    candidates_key: Optional[str]
    candidates_threshold: float
    incorrect_spans_key: Optional[str]

    def any_set(self) -> bool:
        """Whether any has other than its default (candidates_threshold
        matters only with candidates_key)."""
        return bool(self.store_entity_probs or self.ents_threshold) or any(
            key is not None for key in (self.candidates_key, self.incorrect_spans_key)
        )


def is_0x(target: str, constraints: str, entity_settings: EntitySettings0x) -> bool:
    """Whether crf_tagger's settings are 0.x's: a target that moved, constraints
    "auto", or an entity setting."""
    return target not in TOKEN_TARGETS or constraints == "auto" or entity_settings.any_set()


def crf_tagger_0x(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    *,
    tagger_class: Callable[..., CRFComponent],
    target: str,
    constraints: str,
    entity_settings: EntitySettings0x,
    overwrite: bool,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    learn_new_labels: bool,
    scorer: Optional[Callable],
) -> CRFComponent:
    """What crf_tagger built in 0.x: for a moved target (warning W003) a
    CRFEntityRecognizer ("ents"; constraints "auto" and "none" are BILUO) or
    a CRFMorphologizer, else a CRFTagger (constraints "auto" is "none").
    crf_tagger's own scorer, which scores tags, becomes the new component's;
    another scorer is kept. `tagger_class`: CRFTagger (passed in, so that
    this module needs nothing of tagger.py); the other settings are those
    all three components have."""
    # the settings all three components have, passed on by name
    shared: Dict[str, Any] = dict(
        overwrite=overwrite,
        window=window,
        by_sentence=by_sentence,
        batch_words=batch_words,
        store_confidence=store_confidence,
        threads=threads,
        quantize=quantize,
        learn_new_labels=learn_new_labels,
    )
    if target == "ents":
        warnings.warn(Warnings.W003.format(name=name, target=target, factory="crf_ner"), stacklevel=3)
        return CRFEntityRecognizer(
            nlp.vocab,
            model,
            name,
            scheme="BILUO" if constraints in ("auto", "none") else constraints,
            incorrect_spans_key=entity_settings.incorrect_spans_key,
            store_entity_probs=entity_settings.store_entity_probs,
            threshold=entity_settings.ents_threshold,
            candidates_key=entity_settings.candidates_key,
            candidates_threshold=entity_settings.candidates_threshold,
            **shared,
            scorer=ner_score if scorer is tagger_score else scorer,
        )
    if entity_settings.any_set():
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
            **shared,
            scorer=morphologizer_score if scorer is tagger_score else scorer,
        )
    return tagger_class(
        nlp.vocab,
        model,
        name,
        target=target,
        constraints="none" if constraints == "auto" else constraints,  # 0.x's default: no scheme for tags
        **shared,
        scorer=scorer,
    )
