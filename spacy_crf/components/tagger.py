"""The `crf_tagger` component: CRF-decoded token.tag_, token.pos_ or both."""

from typing import Any, Callable, Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Model

from ..ml import CRFBatch
from ..scoring import tagger_score
from ..targets import TOKEN_TARGETS
from .base import CRFComponent
from .defaults import default_model
from .settings import TAGGER, defaults, documented, factory_settings
from .tagger_0x import crf_tagger_0x, is_0x

DEFAULT_TAGGER_MODEL = default_model(transitions="full", emissions="full", nC=8, word_dropout=0.25)


@Language.factory(
    "crf_tagger",
    assigns=["token.tag", "token.pos"],
    default_config={
        "model": DEFAULT_TAGGER_MODEL,
        **defaults(TAGGER),
        "scorer": {"@scorers": "spacy_crf.tagger_scorer.v1"},
    },
    default_score_weights={"tag_acc": 1.0, "pos_acc": None},
)
@documented(TAGGER)
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
    # 0.x's entity settings, which configs of 0.x and 1.0 hold: see tagger_0x.crf_tagger_0x
    store_entity_probs: bool = False,
    ents_threshold: float = 0.0,
    candidates_key: Optional[str] = None,
    candidates_threshold: float = 0.5,
    incorrect_spans_key: Optional[str] = None,
) -> CRFComponent:
    """Create a CRFTagger: a BiLSTM-CRF that writes token.tag_, token.pos_ or both.

    model: the network, e.g. `spacy_crf.BiLSTMCRF.v4`: docs in, CRF scores out.
    scorer: `spacy_crf.tagger_scorer.v1`: tag_acc and/or pos_acc.
    The 0.x targets and entity settings build the component that has them
    now, with a warning (`spacy_crf.components.tagger_0x.crf_tagger_0x`).
    """
    settings = factory_settings(TAGGER, locals())
    deprecated: Dict[str, Any] = dict(
        store_entity_probs=store_entity_probs,
        ents_threshold=ents_threshold,
        candidates_key=candidates_key,
        candidates_threshold=candidates_threshold,
        incorrect_spans_key=incorrect_spans_key,
    )
    if is_0x(target, constraints, deprecated):
        return crf_tagger_0x(nlp, name, model, tagger_class=CRFTagger, scorer=scorer, **deprecated, **settings)
    return CRFTagger(nlp.vocab, model, name, scorer=scorer, **settings)


class CRFTagger(CRFComponent):
    """A part-of-speech tagger whose output layer is a linear-chain CRF:
    token.tag_ ("tag"), token.pos_ ("pos") or both ("tag+pos")."""

    TARGETS = TOKEN_TARGETS
    FACTORY = "crf_tagger"
    SCORER = staticmethod(tagger_score)
    SETTINGS = TAGGER

    def _constraint_scheme(self) -> str:
        return self.cfg.get("constraints", "none")
