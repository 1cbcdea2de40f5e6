"""Superseded registered architectures, kept so that configs and pipelines
of earlier versions keep loading (a registered name never changes). What
replaced each: BiLSTMCRF.v1-v3 -> BiLSTMCRF.v4 (keyword-only, no defaults);
HashCharEmbed.v1-v4 -> HashCharEmbed.v5 (v4's settings plus
sum_byte_gradients, keyword-only); CharCNN.v1 -> CharCNN.v2 (keyword-only)."""

from typing import List, Optional, Union

from spacy.ml.models.tok2vec import MultiHashEmbed
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain, list2ragged
from thinc.types import Floats2d, Ragged

from .bilstm_crf import build_bilstm_crf_v4
from .char_cnn import build_char_cnn_v2
from .crf_batch import CRFBatch
from .embed import hash_char_embed, with_chars_mixed


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
