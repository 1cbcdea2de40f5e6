"""The `crf_tagger` component: CRF-decoded token.tag_, token.pos_ or both."""

from typing import Callable, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..ml import CRFBatch
from ..scoring import tagger_score
from ..targets import TOKEN_TARGETS
from .base import CRFComponent
from .defaults import default_model
from .settings import (
    BATCH_WORDS,
    BY_SENTENCE,
    CONSTRAINTS,
    LEARN_NEW_LABELS,
    OVERWRITE,
    QUANTIZE,
    STORE_CONFIDENCE,
    TAGGER_0X_SETTINGS,
    TAGGER_SETTINGS,
    TAGGER_TARGET,
    THREADS,
    WINDOW,
    defaults,
    documented,
)
from .tagger_0x import EntitySettings0x, crf_tagger_0x, is_0x

DEFAULT_TAGGER_MODEL = default_model(transitions="full", emissions="full", nC=8, word_dropout=0.25)
# not in the default config: spaCy fills them in from the factory's signature
DEFAULTS_0X = defaults(TAGGER_0X_SETTINGS)


@Language.factory(
    "crf_tagger",
    assigns=["token.tag", "token.pos"],
    default_config={
        "model": DEFAULT_TAGGER_MODEL,
        **defaults(TAGGER_SETTINGS),
        "scorer": {"@scorers": "spacy_crf.tagger_scorer.v1"},
    },
    default_score_weights={"tag_acc": 1.0, "pos_acc": None},
)
@documented(TAGGER_SETTINGS)
def make_crf_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    target: str,
    constraints: str,
    overwrite: bool,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    learn_new_labels: bool,
    scorer: Optional[Callable],
    # deprecated (TAGGER_0X_SETTINGS): 0.x's entity settings, which configs of 0.x and 1.0 hold
    store_entity_probs: bool = DEFAULTS_0X["store_entity_probs"],
    ents_threshold: float = DEFAULTS_0X["ents_threshold"],
    candidates_key: Optional[str] = DEFAULTS_0X["candidates_key"],
    candidates_threshold: float = DEFAULTS_0X["candidates_threshold"],
    incorrect_spans_key: Optional[str] = DEFAULTS_0X["incorrect_spans_key"],
) -> CRFComponent:
    """Create a CRFTagger: a BiLSTM-CRF that writes token.tag_, token.pos_ or both.

    model: the network, e.g. `spacy_crf.BiLSTMCRF.v4`: docs in, CRF scores out.
    scorer: `spacy_crf.tagger_scorer.v1`: tag_acc and/or pos_acc.
    The 0.x targets and entity settings build the component that has them
    now, with a warning (`spacy_crf.components.tagger_0x.crf_tagger_0x`).
    """
    entity_settings = EntitySettings0x(
        store_entity_probs=store_entity_probs,
        ents_threshold=ents_threshold,
        candidates_key=candidates_key,
        candidates_threshold=candidates_threshold,
        incorrect_spans_key=incorrect_spans_key,
    )
    if is_0x(target, constraints, entity_settings):
        return crf_tagger_0x(
            nlp,
            name,
            model,
            tagger_class=CRFTagger,
            target=target,
            constraints=constraints,
            entity_settings=entity_settings,
            overwrite=overwrite,
            window=window,
            by_sentence=by_sentence,
            batch_words=batch_words,
            store_confidence=store_confidence,
            threads=threads,
            quantize=quantize,
            learn_new_labels=learn_new_labels,
            scorer=scorer,
        )
    return CRFTagger(
        nlp.vocab,
        model,
        name,
        target=target,
        constraints=constraints,
        overwrite=overwrite,
        window=window,
        by_sentence=by_sentence,
        batch_words=batch_words,
        store_confidence=store_confidence,
        threads=threads,
        quantize=quantize,
        learn_new_labels=learn_new_labels,
        scorer=scorer,
    )


class CRFTagger(CRFComponent):
    """A part-of-speech tagger whose output layer is a linear-chain CRF:
    token.tag_ ("tag"), token.pos_ ("pos") or both ("tag+pos")."""

    TARGETS = TOKEN_TARGETS
    FACTORY = "crf_tagger"
    SETTINGS = TAGGER_SETTINGS

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_tagger",
        *,
        target: str = TAGGER_TARGET.default,
        constraints: str = CONSTRAINTS.default,
        overwrite: bool = OVERWRITE.default,
        window: int = WINDOW.default,
        by_sentence: bool = BY_SENTENCE.default,
        batch_words: int = BATCH_WORDS.default,
        store_confidence: bool = STORE_CONFIDENCE.default,
        threads: int = THREADS.default,
        quantize: str = QUANTIZE.default,
        learn_new_labels: bool = LEARN_NEW_LABELS.default,
        scorer: Optional[Callable] = tagger_score,
    ) -> None:
        """Initialize a CRFTagger; each setting is described in settings.py
        (`TAGGER_SETTINGS`) and checked (E039). scorer: None for none."""
        super().__init__(
            vocab,
            model,
            name,
            scorer=scorer,
            cfg={
                "target": target,
                "constraints": constraints,
                "overwrite": overwrite,
                "window": window,
                "by_sentence": by_sentence,
                "batch_words": batch_words,
                "store_confidence": store_confidence,
            },
            threads=threads,
            quantize=quantize,
            learn_new_labels=learn_new_labels,
        )

    def _constraint_scheme(self) -> str:
        return self.cfg["constraints"]
