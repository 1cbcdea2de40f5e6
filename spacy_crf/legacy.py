"""Superseded registered functions, kept so that configs and pipelines of
earlier versions keep loading (a registered name never changes). What replaced
each: BiLSTMCRF.v1-v3 -> BiLSTMCRF.v4 (keyword-only, no defaults);
HashCharEmbed.v1-v4 -> HashCharEmbed.v5 (v4's settings plus
sum_byte_gradients, keyword-only); CharCNN.v1 -> CharCNN.v2 (keyword-only);
crf_tagger_scorer.v1/.v2 -> tagger_scorer.v1, morphologizer_scorer.v1 and
ner_scorer.v1 (one per component, with .v2's calibration keys)."""

import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from spacy.ml.models.tok2vec import MultiHashEmbed
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import Model, chain, list2ragged
from thinc.types import Floats2d, Ragged

from .calibration.scores import calibration_scores
from .ml import CRFBatch
from .ml.bilstm_crf import build_bilstm_crf_v4
from .ml.char_cnn import build_char_cnn_v2
from .ml.embed import hash_char_embed, with_chars_mixed
from .scorers import morph_scores, token_scores
from .targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget, Target


@registry.architectures("spacy_crf.BiLSTMCRF.v1")
def build_bilstm_crf(
    tok2vec: Model[List[Doc], List[Floats2d]],
    hidden_width: int = 128,
    depth: int = 1,
    dropout: float = 0.0,
    crf: bool = True,
    chunk_size: int = 512,
    nO: Optional[int] = None,
    input_dropout: float = 0.0,
) -> Model[List[Doc], CRFBatch]:
    """BiLSTMCRF.v4 with transitions = emissions = "full" and defaults."""
    return build_bilstm_crf_v3(tok2vec, hidden_width, depth, dropout, crf, chunk_size, nO, input_dropout)


@registry.architectures("spacy_crf.BiLSTMCRF.v2")
def build_bilstm_crf_v2(
    tok2vec: Model[List[Doc], List[Floats2d]],
    hidden_width: int = 128,
    depth: int = 1,
    dropout: float = 0.0,
    crf: bool = True,
    chunk_size: int = 512,
    nO: Optional[int] = None,
    input_dropout: float = 0.0,
    transitions: str = "full",
) -> Model[List[Doc], CRFBatch]:
    """BiLSTMCRF.v4 with emissions = "full" and defaults."""
    return build_bilstm_crf_v3(tok2vec, hidden_width, depth, dropout, crf, chunk_size, nO, input_dropout, transitions)


@registry.architectures("spacy_crf.BiLSTMCRF.v3")
def build_bilstm_crf_v3(
    tok2vec: Model[List[Doc], List[Floats2d]],
    hidden_width: int = 128,
    depth: int = 1,
    dropout: float = 0.0,
    crf: bool = True,
    chunk_size: int = 512,
    nO: Optional[int] = None,
    input_dropout: float = 0.0,
    transitions: str = "full",
    emissions: str = "full",
) -> Model[List[Doc], CRFBatch]:
    """BiLSTMCRF.v4 with defaults and positional settings."""
    return build_bilstm_crf_v4(
        tok2vec,
        hidden_width=hidden_width,
        depth=depth,
        dropout=dropout,
        input_dropout=input_dropout,
        crf=crf,
        chunk_size=chunk_size,
        transitions=transitions,
        emissions=emissions,
        nO=nO,
    )


@registry.architectures("spacy_crf.HashCharEmbed.v1")
def build_hash_char_embed(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool = False,
) -> Model[List[Doc], List[Floats2d]]:
    """spaCy's MultiHashEmbed (every word hash-embedded) and the byte features, mixed."""
    hashes: Model[List[Doc], Ragged] = chain(
        MultiHashEmbed(width=width, attrs=attrs, rows=rows, include_static_vectors=include_static_vectors),
        list2ragged(),
    )
    return with_chars_mixed(hashes, attrs, width, width, nM, nC)


@registry.architectures("spacy_crf.HashCharEmbed.v2")
def build_hash_char_embed_v2(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool = False,
    min_count: int = 0,
    word_dropout: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """HashCharEmbed.v5 with sum_byte_gradients = false, no word encoder, and defaults."""
    return hash_char_embed(width, attrs, rows, nM, nC, include_static_vectors, min_count, word_dropout, False)


@registry.architectures("spacy_crf.HashCharEmbed.v3")
def build_hash_char_embed_v3(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool = False,
    min_count: int = 0,
    word_dropout: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """HashCharEmbed.v5 with sum_byte_gradients = true, no word encoder, and defaults."""
    return hash_char_embed(width, attrs, rows, nM, nC, include_static_vectors, min_count, word_dropout, True)


@registry.architectures("spacy_crf.HashCharEmbed.v4")
def build_hash_char_embed_v4(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool = False,
    min_count: int = 0,
    word_dropout: float = 0.0,
    word_encoder: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """HashCharEmbed.v5 with sum_byte_gradients = true, and defaults."""
    return hash_char_embed(
        width, attrs, rows, nM, nC, include_static_vectors, min_count, word_dropout, True, word_encoder
    )


@registry.architectures("spacy_crf.CharCNN.v1")
def build_char_cnn(
    width: int = 64, nM: int = 32, window: int = 1, nP: int = 3, max_bytes: int = 20
) -> Model[List[Doc], List[Floats2d]]:
    """CharCNN.v2 with defaults and positional settings."""
    return build_char_cnn_v2(width=width, nM=nM, window=window, nP=nP, max_bytes=max_bytes)


def crf_tagger_score(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """The scores of 0.x's crf_tagger for its target: those of tagger_scorer.v1,
    morphologizer_scorer.v1 or (target "ents") ner_scorer.v1, without calibration keys."""
    if target == "ents":
        return get_ner_prf(examples)
    if target in MORPH_TARGETS:
        return morph_scores(examples, target=target, **kwargs)
    return token_scores(examples, target=target, **kwargs)


def crf_tagger_score_v2(examples: Iterable[Example], *, target: str = "tag", **kwargs: Any) -> Dict[str, Any]:
    """`crf_tagger_score` plus the calibration keys of the probabilities stored."""
    examples = list(examples)
    scores = crf_tagger_score(examples, target=target, **kwargs)
    if target == "ents":
        scheme = kwargs.get("scheme") or kwargs.get("constraints", "auto")
        kind: Target = EntityTarget("BILUO" if scheme in ("auto", None) else scheme)
    else:
        kind = {**TOKEN_TARGETS, **MORPH_TARGETS}[target]
    scores.update(calibration_scores(examples, kind))
    return scores


@registry.scorers("spacy_crf.crf_tagger_scorer.v1")
def make_crf_tagger_scorer() -> Callable[..., Dict[str, Any]]:
    return crf_tagger_score


@registry.scorers("spacy_crf.crf_tagger_scorer.v2")
def make_crf_tagger_scorer_v2() -> Callable[..., Dict[str, Any]]:
    """`.v1` plus confidence_ece/_brier and ents_prob_ece/_brier where the
    predicted docs carry probabilities."""
    return crf_tagger_score_v2


# crf_tagger's 0.x targets and entity settings. Up to 0.3.0 crf_tagger was the
# only factory; its targets "morph", "pos+morph", "tag+pos+morph" and "ents"
# now belong to crf_morphologizer and crf_ner, and the entity settings to
# crf_ner. Configs and pipelines of 0.x (and 1.0's filled crf_tagger configs,
# which hold the entity settings) keep training, loading and predicting.
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
    from .components.morphologizer import CRFMorphologizer
    from .components.ner import CRFEntityRecognizer
    from .errors import Errors, Warnings
    from .scorers import morphologizer_score, ner_score, tagger_score

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
