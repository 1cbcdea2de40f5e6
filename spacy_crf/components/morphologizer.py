"""The `crf_morphologizer` component: CRF-decoded token.pos_ and token.morph
(and token.tag_), one label per bundle as spaCy's morphologizer labels them."""

from typing import Any, Callable, Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..ml import CRFBatch
from ..scoring import morphologizer_score
from ..targets import MORPH_TARGETS
from .base import CRFComponent
from .defaults import default_model
from .settings import (
    BATCH_WORDS,
    BY_SENTENCE,
    EXTEND,
    LABEL_SMOOTHING,
    LEARN_NEW_LABELS,
    MORPHOLOGIZER_OVERWRITE,
    MORPHOLOGIZER_SETTINGS,
    MORPHOLOGIZER_TARGET,
    QUANTIZE,
    STORE_CONFIDENCE,
    THREADS,
    WINDOW,
    check_setting,
    defaults,
    documented,
)

DEFAULT_MORPHOLOGIZER_MODEL = default_model(transitions="factored", emissions="composed", nC=16, word_dropout=0.05)


@Language.factory(
    "crf_morphologizer",
    assigns=["token.pos", "token.morph", "token.tag"],
    default_config={
        "model": DEFAULT_MORPHOLOGIZER_MODEL,
        **defaults(MORPHOLOGIZER_SETTINGS),
        "scorer": {"@scorers": "spacy_crf.morphologizer_scorer.v1"},
    },
    default_score_weights={"pos_acc": 0.5, "morph_acc": 0.5, "morph_per_feat": None},
)
@documented(MORPHOLOGIZER_SETTINGS)
def make_crf_morphologizer(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    target: str,
    overwrite: bool,
    extend: bool,
    label_smoothing: float,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    learn_new_labels: bool,
    scorer: Optional[Callable],
) -> "CRFMorphologizer":
    """Create a CRFMorphologizer: a BiLSTM-CRF that writes token.pos_ and token.morph.

    model: the network, e.g. `spacy_crf.BiLSTMCRF.v4` with transitions "factored" and
        emissions "composed" (the default), which keep thousands of bundles fast.
    scorer: `spacy_crf.morphologizer_scorer.v1`: pos_acc, morph_acc, morph_per_feat and
        pos_morph_acc as spaCy's morphologizer scores them (tag_acc and
        tag_pos_morph_acc for "tag+pos+morph").
    """
    return CRFMorphologizer(
        nlp.vocab,
        model,
        name,
        target=target,
        overwrite=overwrite,
        extend=extend,
        label_smoothing=label_smoothing,
        window=window,
        by_sentence=by_sentence,
        batch_words=batch_words,
        store_confidence=store_confidence,
        threads=threads,
        quantize=quantize,
        learn_new_labels=learn_new_labels,
        scorer=scorer,
    )


class CRFMorphologizer(CRFComponent):
    """A morphologizer whose output layer is a linear-chain CRF over the
    bundles (UPOS and features) of the training data."""

    TARGETS = MORPH_TARGETS
    FACTORY = "crf_morphologizer"
    SETTINGS = MORPHOLOGIZER_SETTINGS

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_morphologizer",
        *,
        target: str = MORPHOLOGIZER_TARGET.default,
        overwrite: bool = MORPHOLOGIZER_OVERWRITE.default,
        extend: bool = EXTEND.default,
        label_smoothing: float = LABEL_SMOOTHING.default,
        window: int = WINDOW.default,
        by_sentence: bool = BY_SENTENCE.default,
        batch_words: int = BATCH_WORDS.default,
        store_confidence: bool = STORE_CONFIDENCE.default,
        threads: int = THREADS.default,
        quantize: str = QUANTIZE.default,
        learn_new_labels: bool = LEARN_NEW_LABELS.default,
        scorer: Optional[Callable] = morphologizer_score,
    ) -> None:
        """Initialize a CRFMorphologizer; each setting is described in
        settings.py (`MORPHOLOGIZER_SETTINGS`) and checked (E039). scorer:
        None for none."""
        # accepted so that spaCy's morphologizer configs load: always 0.0
        self.label_smoothing: float = check_setting(LABEL_SMOOTHING, label_smoothing, name)
        super().__init__(
            vocab,
            model,
            name,
            scorer=scorer,
            cfg={
                "target": target,
                "overwrite": overwrite,
                "extend": extend,
                "window": window,
                "by_sentence": by_sentence,
                "batch_words": batch_words,
                "store_confidence": store_confidence,
            },
            threads=threads,
            quantize=quantize,
            learn_new_labels=learn_new_labels,
        )

    def _write_options(self) -> Dict[str, Any]:
        return {"overwrite": self.cfg["overwrite"], "extend": self.cfg["extend"]}
