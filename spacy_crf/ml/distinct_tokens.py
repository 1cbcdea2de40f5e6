"""Predict a context-free embedding once per distinct token of a batch.

A HashCharEmbed vector is a function of a few integer attributes of the
token (its ORTH, whose bytes the character features read, and the hashed
attributes such as NORM and SHAPE): the 25,147 words of the EWT dev set, one
`nlp.pipe` batch of 201 docs, hold 5,494 distinct keys. `per_distinct_token`
runs the embedding's layers on one `DistinctTokens` stand-in for the batch,
which shows those layers only the first token of each distinct key, and
copies the results to every token. Only `predict` (is_train False) on the
CPU takes this path; training, where dropout differs per token, and the GPU
run the layers on every token. The model keeps the node, name and layers of
the chain it replaces, so saved models load into it.
"""

from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.attrs import ORTH
from spacy.tokens import Doc, Span
from thinc.api import Model
from thinc.layers.chain import forward as chain_forward
from thinc.types import Floats2d

from ..typed_api import unflatten
from .features import token_array

# Above this share of distinct tokens, taking them apart does not pay.
MAX_DISTINCT_SHARE = 0.8


class DistinctTokens:
    """The first token of each distinct key, read as one doc by the feature
    layers (`to_array`, `len`, `vocab`). The key columns were read from the
    docs once; other columns are read from the docs and selected."""

    def __init__(self, docs: Sequence[Union[Doc, Span]], rows: numpy.ndarray, columns: List[int], keys: numpy.ndarray):
        self.docs = docs
        self.rows = rows
        self.vocab = docs[0].vocab
        self._where = {column: i for i, column in enumerate(columns)}
        self._keys = keys[rows]  # shape: (n_distinct, n_columns)

    def __len__(self) -> int:
        return len(self.rows)

    def to_array(self, columns):
        wanted = [columns] if isinstance(columns, int) else list(columns)
        if all(column in self._where for column in wanted):
            array = self._keys[:, [self._where[column] for column in wanted]]
        else:
            array = numpy.concatenate([token_array(doc, wanted).reshape(len(doc), len(wanted)) for doc in self.docs])[
                self.rows
            ]
        return array[:, 0] if isinstance(columns, int) else array


def per_distinct_token(chained: Model, key_attrs: Sequence[int]) -> Model[List[Doc], List[Floats2d]]:
    """The chain `chained` (docs in, one array per doc out), predicting once
    per distinct token key: ORTH, the vocab's vectors key and `key_attrs`.
    """
    return Model(
        chained.name,
        _forward,
        init=chained.init,
        dims={name: chained.maybe_get_dim(name) for name in chained.dim_names},
        layers=chained.layers,
        attrs={"key_attrs": [ORTH, *key_attrs]},
    )


def _forward(model: Model, docs: List[Union[Doc, Span]], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    groups = None if is_train or model.ops.xp is not numpy else distinct_tokens(docs, model.attrs["key_attrs"])
    if groups is None:
        return chain_forward(model, docs, is_train)
    distinct, inverse = groups
    (vectors,), _ = chain_forward(model, [distinct], is_train)
    return unflatten(model.ops, vectors[inverse], [len(doc) for doc in docs]), _no_backprop


def _no_backprop(d_output):
    raise ValueError("per_distinct_token only predicts: its training path runs every token")


def distinct_tokens(
    docs: Sequence[Union[Doc, Span]], key_attrs: Sequence[int]
) -> Optional[Tuple[DistinctTokens, numpy.ndarray]]:
    """The first token of each distinct key of the docs, and each token's key index.

    RETURNS: (the distinct tokens, the index of each of the docs' tokens among
        them), or None when grouping would not pay (under 2 tokens, mostly
        distinct keys).
    """
    if sum(len(doc) for doc in docs) < 2:
        return None
    columns = list(key_attrs)
    vectors_attr = getattr(docs[0].vocab.vectors, "attr", ORTH)
    if vectors_attr not in columns:
        columns.append(vectors_attr)
    keys = numpy.concatenate([token_array(doc, columns).reshape(len(doc), len(columns)) for doc in docs])
    keys = numpy.ascontiguousarray(keys, dtype="uint64")
    rows = keys.view(numpy.dtype((numpy.void, keys.dtype.itemsize * len(columns)))).ravel()
    _, first, inverse = numpy.unique(rows, return_index=True, return_inverse=True)
    if len(first) > MAX_DISTINCT_SHARE * len(rows):
        return None
    return DistinctTokens(docs, first, columns, keys), inverse.reshape(-1)
