"""The `crf_morphologizer` component: CRF-decoded token.pos_ and token.morph
(and token.tag_), one label per bundle as spaCy's morphologizer labels them."""
from typing import Callable, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..ml import CRFBatch
from ..scorers import morphologizer_score
from ..targets import MORPH_TARGETS
from .base import CRFComponent
from .defaults import default_model

DEFAULT_MORPHOLOGIZER_MODEL = default_model(
    transitions="factored", emissions="composed", nC=16, word_dropout=0.05
)


@Language.factory(
    "crf_morphologizer",
    assigns=["token.pos", "token.morph", "token.tag"],
    default_config={
        "model": DEFAULT_MORPHOLOGIZER_MODEL,
        "target": "pos+morph",
        "overwrite": False,
        "window": 8192,
        "by_sentence": False,
        "batch_words": 32768,
        "store_confidence": False,
        "threads": 0,
        "quantize": "none",
        "scorer": {"@scorers": "spacy_crf.morphologizer_scorer.v1"},
    },
    default_score_weights={"pos_acc": 0.5, "morph_acc": 0.5, "morph_per_feat": None},
)
def make_crf_morphologizer(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    target: str,
    overwrite: bool,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    scorer: Optional[Callable],
) -> "CRFMorphologizer":
    """Create a CRFMorphologizer: a BiLSTM-CRF that writes token.pos_ and token.morph.

    Args:
        model: The network, e.g. `spacy_crf.BiLSTMCRF.v4` with transitions "factored" and emissions
            "composed" (the default), which keep thousands of bundles fast.
        target: "pos+morph" writes token.pos_ and token.morph from one CRF over the bundles of the
            training data ("Case=Nom|Number=Plur|POS=NOUN", spaCy's morphologizer labels); "morph"
            writes token.morph only ("Case=Nom|Number=Plur"); "tag+pos+morph" token.tag_ as well, one
            label per (tag, bundle) ("NNS Number=Plur|POS=NOUN", UDPipe's AllTags).
        overwrite: Replace values that a doc already has (spaCy's convention is to keep them).
        window: Docs longer than this many tokens are tagged window by window, to bound memory; 0 never splits.
        by_sentence: The BiLSTM and the CRF read each sentence of a doc on its own; the tok2vec still
            reads the whole doc.
        batch_words: `pipe` grows each batch of `batch_size` docs by whole docs until it holds at least
            this many tokens; 0 keeps spaCy's batches.
        store_confidence: Write the marginal probability of each token's predicted label to
            token._.crf_confidence.
        threads: CPU threads of the component's torch work; 0 (auto) is one thread unless the process
            chose a count; training under a transformer keeps the process's count.
        quantize: "none", "int8" or "bf16": CPU prediction through a quantized copy of the network.
        scorer: The scorer, `spacy_crf.morphologizer_scorer.v1`: pos_acc, morph_acc, morph_per_feat and
            pos_morph_acc as spaCy's morphologizer scores them (tag_acc and tag_pos_morph_acc for
            "tag+pos+morph").
    """
    return CRFMorphologizer(
        nlp.vocab, model, name, target=target, overwrite=overwrite, window=window, by_sentence=by_sentence,
        batch_words=batch_words, store_confidence=store_confidence, threads=threads, quantize=quantize,
        scorer=scorer,
    )


class CRFMorphologizer(CRFComponent):
    """A morphologizer whose output layer is a linear-chain CRF over the
    bundles (UPOS and features) of the training data."""

    TARGETS = MORPH_TARGETS

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_morphologizer",
        *,
        target: str = "pos+morph",
        overwrite: bool = False,
        window: int = 8192,
        by_sentence: bool = False,
        batch_words: int = 32768,
        store_confidence: bool = False,
        threads: int = 0,
        quantize: str = "none",
        scorer: Optional[Callable] = morphologizer_score,
    ) -> None:
        """Initialize a CRF morphologizer (see `make_crf_morphologizer` for the settings)."""
        super().__init__(
            vocab, model, name, target=target, overwrite=overwrite, window=window, by_sentence=by_sentence,
            batch_words=batch_words, store_confidence=store_confidence, threads=threads, quantize=quantize,
            scorer=scorer,
        )
