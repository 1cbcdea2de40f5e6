"""The `crf_morphologizer` component: CRF-decoded token.pos_ and token.morph
(and token.tag_), one label per bundle as spaCy's morphologizer labels them."""

from typing import Any, Callable, Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Model

from ..ml import CRFBatch
from ..scoring import morphologizer_score
from ..targets import MORPH_TARGETS
from .base import CRFComponent
from .defaults import default_model
from .settings import MORPHOLOGIZER, defaults, documented, factory_settings

DEFAULT_MORPHOLOGIZER_MODEL = default_model(transitions="factored", emissions="composed", nC=16, word_dropout=0.05)


@Language.factory(
    "crf_morphologizer",
    assigns=["token.pos", "token.morph", "token.tag"],
    default_config={
        "model": DEFAULT_MORPHOLOGIZER_MODEL,
        **defaults(MORPHOLOGIZER),
        "scorer": {"@scorers": "spacy_crf.morphologizer_scorer.v1"},
    },
    default_score_weights={"pos_acc": 0.5, "morph_acc": 0.5, "morph_per_feat": None},
)
@documented(MORPHOLOGIZER)
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
    return CRFMorphologizer(nlp.vocab, model, name, scorer=scorer, **factory_settings(MORPHOLOGIZER, locals()))


class CRFMorphologizer(CRFComponent):
    """A morphologizer whose output layer is a linear-chain CRF over the
    bundles (UPOS and features) of the training data."""

    TARGETS = MORPH_TARGETS
    FACTORY = "crf_morphologizer"
    SCORER = staticmethod(morphologizer_score)
    SETTINGS = MORPHOLOGIZER

    def _write_options(self) -> Dict[str, Any]:
        return {"overwrite": self.cfg["overwrite"], "extend": self.cfg.get("extend", False)}
