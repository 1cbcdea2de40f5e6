"""The `crf_tagger` component: CRF-decoded token.tag_, token.pos_ or both."""
import warnings
from typing import Callable, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..errors import Errors, Warnings
from ..ml import CRFBatch
from ..scorers import tagger_score
from ..targets import SCHEMES, TOKEN_TARGETS
from .base import CRFComponent
from .defaults import default_model

DEFAULT_TAGGER_MODEL = default_model(transitions="full", emissions="full", nC=8, word_dropout=0.25)

# crf_tagger's settings of 0.x that only its target "ents" read (crf_ner's
# now): accepted so that 0.x configs load, never needed in a 1.0 config
DEPRECATED_SETTINGS = ("store_entity_probs", "ents_threshold", "candidates_key", "candidates_threshold", "incorrect_spans_key")
# 0.x targets of crf_tagger, now the other factories'
MOVED_TARGETS = {
    "morph": "crf_morphologizer",
    "pos+morph": "crf_morphologizer",
    "tag+pos+morph": "crf_morphologizer",
    "ents": "crf_ner",
}


@Language.factory(
    "crf_tagger",
    assigns=["token.tag", "token.pos"],
    default_config={
        "model": DEFAULT_TAGGER_MODEL,
        "target": "tag",
        "overwrite": False,
        "constraints": "none",
        "window": 8192,
        "by_sentence": False,
        "batch_words": 32768,
        "store_confidence": False,
        "threads": 0,
        "quantize": "none",
        "scorer": {"@scorers": "spacy_crf.tagger_scorer.v1"},
    },
    default_score_weights={"tag_acc": 1.0, "pos_acc": None},
)
def make_crf_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFBatch],
    target: str,
    overwrite: bool,
    constraints: str,
    window: int,
    by_sentence: bool,
    batch_words: int,
    store_confidence: bool,
    threads: int,
    quantize: str,
    scorer: Optional[Callable],
    store_entity_probs: bool = False,
    ents_threshold: float = 0.0,
    candidates_key: Optional[str] = None,
    candidates_threshold: float = 0.5,
    incorrect_spans_key: Optional[str] = None,
) -> CRFComponent:
    """Create a CRFTagger: a BiLSTM-CRF that writes token.tag_, token.pos_ or both.

    Args:
        model: The network, e.g. `spacy_crf.BiLSTMCRF.v4`: docs in, CRF scores out.
        target: "tag" writes token.tag_, "pos" token.pos_ (UPOS), "tag+pos" both, from one CRF over the
            (tag, pos) pairs of the training data ("NNS|NOUN").
        overwrite: Replace labels that a doc already has (spaCy's convention is to keep them).
        constraints: "none", or a tag scheme ("BIO"/"IOB2", "BILUO", "IOBES") whose invalid transitions
            get probability exactly 0, for chunk tags such as "B-NP".
        window: Docs longer than this many tokens are tagged window by window, to bound memory; 0 never splits.
        by_sentence: The BiLSTM and the CRF read each sentence of a doc on its own (the doc's sentences,
            or where spaCy's sentencizer would cut it); the tok2vec still reads the whole doc.
        batch_words: `pipe` grows each batch of `batch_size` docs by whole docs until it holds at least
            this many tokens (short docs tag faster in large batches); 0 keeps spaCy's batches.
        store_confidence: Write the marginal probability of each token's predicted label to
            token._.crf_confidence.
        threads: CPU threads of the component's torch work; 0 (auto) is one thread unless the process
            chose a count (OMP_NUM_THREADS, MKL_NUM_THREADS or torch.set_num_threads); training under a
            transformer keeps the process's count (the encoder's backward runs in the update).
        quantize: "none"; "int8" predicts on the CPU with an int8 copy of the LSTM and linear layers;
            "bf16" with a bfloat16 copy. Training, saving and the GPU use the float32 network.
        scorer: The scorer, `spacy_crf.tagger_scorer.v1`: tag_acc and/or pos_acc.
        store_entity_probs: Deprecated (0.x, target "ents"): use crf_ner.
        ents_threshold: Deprecated (0.x, target "ents"): crf_ner's threshold.
        candidates_key: Deprecated (0.x, target "ents"): use crf_ner.
        candidates_threshold: Deprecated (0.x, target "ents"): use crf_ner.
        incorrect_spans_key: Deprecated (0.x, target "ents"): use crf_ner.

    The 0.x targets "morph", "pos+morph", "tag+pos+morph" and "ents" still
    build a component (a CRFMorphologizer or a CRFEntityRecognizer, with
    warning W003) so that pipelines saved by 0.x load and predict as before.
    """
    if target in MOVED_TARGETS:
        warnings.warn(Warnings.W003.format(name=name, target=target, factory=MOVED_TARGETS[target]), stacklevel=2)
        from .moved_targets import make_moved_target

        return make_moved_target(
            nlp, name, model, target=target, overwrite=overwrite, constraints=constraints, window=window,
            by_sentence=by_sentence, batch_words=batch_words, store_confidence=store_confidence,
            threads=threads, quantize=quantize, scorer=scorer, store_entity_probs=store_entity_probs,
            ents_threshold=ents_threshold, candidates_key=candidates_key,
            candidates_threshold=candidates_threshold, incorrect_spans_key=incorrect_spans_key,
        )
    if store_entity_probs or ents_threshold or candidates_key is not None or incorrect_spans_key is not None:
        raise ValueError(Errors.E020.format(name=name, target=target))
    if constraints == "auto":  # 0.x's default: no scheme for tags
        constraints = "none"
    return CRFTagger(
        nlp.vocab, model, name, target=target, overwrite=overwrite, constraints=constraints, window=window,
        by_sentence=by_sentence, batch_words=batch_words, store_confidence=store_confidence,
        threads=threads, quantize=quantize, scorer=scorer,
    )


class CRFTagger(CRFComponent):
    """A part-of-speech tagger whose output layer is a linear-chain CRF:
    token.tag_ ("tag"), token.pos_ ("pos") or both ("tag+pos")."""

    TARGETS = TOKEN_TARGETS

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFBatch],
        name: str = "crf_tagger",
        *,
        target: str = "tag",
        overwrite: bool = False,
        constraints: str = "none",
        window: int = 8192,
        by_sentence: bool = False,
        batch_words: int = 32768,
        store_confidence: bool = False,
        threads: int = 0,
        quantize: str = "none",
        scorer: Optional[Callable] = tagger_score,
    ) -> None:
        """Initialize a CRF tagger (see `make_crf_tagger` for the settings)."""
        if constraints not in SCHEMES:
            raise ValueError(Errors.E014.format(scheme=constraints, options=list(SCHEMES)))
        super().__init__(
            vocab, model, name, target=target, overwrite=overwrite, window=window, by_sentence=by_sentence,
            batch_words=batch_words, store_confidence=store_confidence, threads=threads, quantize=quantize,
            scorer=scorer, settings={"constraints": constraints},
        )

    def _constraint_scheme(self) -> str:
        return self.cfg.get("constraints", "none")
