"""Superseded registered functions, kept so that configs and pipelines of
earlier versions keep loading (a registered name never changes). What replaced
each: BiLSTMCRF.v1-v3 -> BiLSTMCRF.v4 (keyword-only, no defaults);
HashCharEmbed.v1-v4 -> HashCharEmbed.v5 (v4's settings plus
sum_byte_gradients, keyword-only); CharCNN.v1 -> CharCNN.v2 (keyword-only);
crf_tagger_scorer.v1/.v2 -> tagger_scorer.v1, morphologizer_scorer.v1 and
ner_scorer.v1 (one per component, with .v2's calibration keys)."""
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from spacy.ml.models.tok2vec import MultiHashEmbed
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import Model, chain, list2ragged
from thinc.types import Floats2d

from .calibration.scores import calibration_scores
from .ml import CRFBatch
from .ml.bilstm_crf import build_bilstm_crf_v4
from .ml.char_cnn import build_char_cnn_v2
from .ml.embed import hash_char_embed, with_chars_mixed
from .scorers import morph_scores, token_scores
from .targets import MORPH_TARGETS, TOKEN_TARGETS, EntityTarget


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
        tok2vec, hidden_width=hidden_width, depth=depth, dropout=dropout, input_dropout=input_dropout, crf=crf,
        chunk_size=chunk_size, transitions=transitions, emissions=emissions, nO=nO,
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
    hashes = chain(
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
        kind = EntityTarget("BILUO" if scheme in ("auto", None) else scheme)
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
