"""`spacy_crf.HashCharEmbed.v5`: embeddings from hash tables of lexical
attributes plus character features (and a word encoder), mixed by a Maxout
layer into one vector per token; a known-word list for the first attribute
(`min_count`) maps rare words to one trained unknown-word vector. The earlier
versions are in spacy_crf/ml/legacy.py.

The features of a batch are built on the host in one array and copied to the
device once (features.py); the outputs equal spaCy's per-doc layers'.
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union, cast

import numpy
from spacy.attrs import intify_attr
from spacy.ml.staticvectors import StaticVectors
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import (
    HashEmbed,
    Maxout,
    Model,
    chain,
    concatenate,
    list2ragged,
    ragged2list,
    with_array,
)
from thinc.types import Floats2d, Ints2d, Ragged

from ..errors import Errors
from ..typed_api import asarray, hash_string
from .arguments import FLAG, POSITIVE, RATE, WHOLE, check_arguments
from .distinct_tokens import per_distinct_token
from .features import batch_features, byte_embed
from .host_blas import on_host_blas
from .unique_rows import unique_rows


def with_chars_mixed(
    hashes: Model[List[Doc], Ragged],
    attrs: List[Union[str, int]],
    n_hashed: int,
    width: int,
    nM: int,
    nC: int,
    exact_gradient: bool = False,
    word_encoder: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """Concatenate the character features (and the word encoder's vectors) to
    the `n_hashed` columns of `hashes` (of the token attributes `attrs`) and
    mix them into `width` by a Maxout, computed once per distinct row, on
    numpy's BLAS on the CPU; `predict` on the CPU runs once per distinct token."""
    features: List[Model[List[Doc], Ragged]] = [chain(byte_embed(nM, nC, exact_gradient), list2ragged()), hashes]
    n_features = nM * nC + n_hashed
    if word_encoder is not None:
        features.append(chain(word_encoder, list2ragged()))
        n_features += word_encoder.get_dim("nO")
    mix = unique_rows(Maxout(width, n_features, nP=3, normalize=True, dropout=0.0))
    mixed: Model[List[Doc], List[Floats2d]] = chain(concatenate(*features), mix, ragged2list())
    return on_host_blas(per_distinct_token(mixed, [intify_attr(attr) for attr in attrs]))


# The key that stands for every word outside the known-word list.
UNKNOWN_WORD = numpy.uint64(hash_string("\x00spacy_crf.unknown_word"))


@registry.architectures("spacy_crf.HashCharEmbed.v5")
def build_hash_char_embed_v5(
    *,
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool,
    min_count: int,
    word_dropout: float,
    sum_byte_gradients: bool,
    word_encoder: Optional[Model[List[Doc], List[Floats2d]]],
) -> Model[List[Doc], List[Floats2d]]:
    """Embed each token from hash tables of its attributes and from the bytes
    of its word (and a word encoder's vector), mixed by a Maxout layer.

    Args:
        width: Output width, also the width of each hash embedding.
        attrs: The attributes to hash-embed, the word first, e.g. ["NORM", "PREFIX", "SUFFIX", "SHAPE"].
        rows: The rows of each attribute's embedding table.
        nM: The width of each byte's embedding.
        nC: The UTF-8 bytes embedded per word, half from its start and half from its end (spaCy's
            CharacterEmbed).
        include_static_vectors: Also use the vocab's static vectors.
        min_count: 0 embeds every word; n > 0 keeps the words seen at least n times in the training data
            (counted at initialize) and maps the others to one unknown-word key.
        word_dropout: While training, the share of known words also replaced by the unknown-word key
            (needs min_count > 0).
        sum_byte_gradients: True trains the byte table with the summed gradient of every token; false
            keeps spaCy's CharacterEmbed rule (one token's gradient per doc, byte and position).
        word_encoder: A model giving one vector per token with an "nO" dim (e.g. `spacy_crf.CharCNN.v2`),
            mixed in beside the hash and byte features; null for none.
    """
    check_arguments(
        "spacy_crf.HashCharEmbed.v5",
        width=(width, POSITIVE),
        nM=(nM, POSITIVE),
        nC=(nC, WHOLE),
        min_count=(min_count, WHOLE),
        word_dropout=(word_dropout, RATE),
        include_static_vectors=(include_static_vectors, FLAG),
        sum_byte_gradients=(sum_byte_gradients, FLAG),
    )
    for row_count in rows:
        check_arguments("spacy_crf.HashCharEmbed.v5", rows=(row_count, POSITIVE))
    return hash_char_embed(
        width, attrs, rows, nM, nC, include_static_vectors, min_count, word_dropout, sum_byte_gradients, word_encoder
    )


def hash_char_embed(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool,
    min_count: int,
    word_dropout: float,
    exact_gradient: bool,
    word_encoder: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    if len(rows) != len(attrs):
        raise ValueError(f"Mismatched lengths: {len(rows)} rows vs {len(attrs)} attrs")
    embeddings: List[Model[Ints2d, Floats2d]] = [
        HashEmbed(width, n_rows, column=i, seed=8 + i, dropout=0.0) for i, n_rows in enumerate(rows)
    ]
    layers: List[Model[Any, Any]] = [batch_features(attrs), list2ragged()]
    if min_count > 0:
        layers.append(known_words(intify_attr(attrs[0]), min_count, word_dropout))
    layers.append(with_array(concatenate(*embeddings)))
    hashes: Model[List[Doc], Ragged] = chain(*layers)
    if include_static_vectors:
        hashes = concatenate(hashes, StaticVectors(width, dropout=0.0))
    n_hashed = width * (len(rows) + include_static_vectors)
    return with_chars_mixed(hashes, attrs, n_hashed, width, nM, nC, exact_gradient, word_encoder)


def known_words(attr: int, min_count: int, word_dropout: float) -> Model[Ragged, Ragged]:
    """Replace the words outside the known-word list (column 0) by UNKNOWN_WORD.

    attrs["known"] holds the sorted keys of the known words, and
    attrs["counted"] whether they were counted. `count_known_words` counts
    them over the training data (a component's initialize calls it for every
    such layer of the pipeline, a shared tok2vec's too); a layer initialized
    before that counts the words of its initialization sample.
    """
    return Model(
        "known_words",
        _known_words_forward,
        init=_known_words_init,
        attrs={
            "attr": attr,
            "min_count": min_count,
            "word_dropout": word_dropout,
            "known": numpy.zeros((0,), dtype="uint64"),
            "counted": False,
        },
    )


def _known_words_init(model: Model, X: Optional[Ragged] = None, Y: None = None) -> None:
    if X is not None and not model.attrs["counted"]:
        _set_known(model, model.ops.to_numpy(cast(Ints2d, X.dataXd)[:, 0]))


def _set_known(layer: Model, words: numpy.ndarray) -> None:
    words, counts = numpy.unique(words.astype("uint64"), return_counts=True)
    layer.attrs["known"] = words[counts >= layer.attrs["min_count"]]
    layer.attrs["counted"] = True


def _known_words_forward(model: Model, X: Ragged, is_train: bool) -> Tuple[Ragged, Callable]:
    xp = model.ops.xp
    known = model.attrs["known"]
    if not (model.attrs["counted"] or len(known)):  # a saved list was counted
        raise ValueError(Errors.E016.format(min_count=model.attrs["min_count"]))
    keys = cast(Ints2d, X.dataXd)
    words = keys[:, 0]
    known = _on_device(model, known)
    if len(known):
        where = xp.searchsorted(known, words).clip(0, len(known) - 1)
        unknown = known[where] != words
    else:  # no word reached min_count
        unknown = xp.ones(words.shape, dtype=bool)
    if is_train and model.attrs["word_dropout"] > 0:
        unknown |= xp.random.random_sample(words.shape) < model.attrs["word_dropout"]
    keys = keys.copy()
    keys[unknown, 0] = UNKNOWN_WORD
    return Ragged(keys, X.lengths), lambda dY: dY


# model.id -> (the host list, its copy on the device): copied once, not per batch.
_DEVICE_KNOWN: Dict[int, Tuple[numpy.ndarray, object]] = {}


def _on_device(model: Model, known: numpy.ndarray):
    if isinstance(known, numpy.ndarray) and model.ops.xp is numpy:
        return known
    cached = _DEVICE_KNOWN.get(model.id)
    if cached is None or cached[0] is not known:
        if len(_DEVICE_KNOWN) >= 16:  # layers of models no longer in use
            _DEVICE_KNOWN.clear()
        cached = _DEVICE_KNOWN[model.id] = (known, asarray(model.ops, known))
    return cached[1]


def count_known_words(models: Iterable[Model], get_docs: Callable[[], Iterable[Doc]]) -> None:
    """Count the known-word list of every known_words layer in these models
    over the words of the docs (the training data).

    models (Iterable[Model]): e.g. the models of a pipeline's components.
    get_docs (Callable[[], Iterable[Doc]]): the training docs; only read when
        a model has a known_words layer, once for all of them.
    """
    layers = {node.id: node for model in models for node in model.walk() if node.name == "known_words"}
    if not layers:
        return
    attrs = sorted({layer.attrs["attr"] for layer in layers.values()})
    columns = [doc.to_array(attrs).reshape(len(doc), len(attrs)) for doc in get_docs()]
    keys = numpy.concatenate(columns) if columns else numpy.zeros((0, len(attrs)), dtype="uint64")
    for layer in layers.values():
        _set_known(layer, keys[:, attrs.index(layer.attrs["attr"])])
