"""Token features for a whole batch at once: one host array, one copy to the device.

spaCy's `FeatureExtractor` and `CharacterEmbed` work doc by doc: a copy to
the device per doc, and for the characters a Python loop over every token
(`Doc.to_utf8_array`). On a GPU that host work was most of the embedding's
time. The layers here compute the same outputs for the whole batch:

- `batch_features(columns)`: spaCy's FeatureExtractor ("extract_features").
- `byte_embed(nM, nC)`: spaCy's CharacterEmbed ("charembed"): the first and
  last nC/2 UTF-8 bytes of each word, each embedded by its position's table.
  A word's bytes are looked up once per process (`utf8_ends`), by its ORTH.

Both keep the name, dims, params and attrs of the spaCy layer they replace,
so models saved with spaCy's layers load into them. `byte_embed`'s gradient
has two modes: spaCy's (`exact_gradient=False`: of the tokens of one doc
that share a byte at a position, only the last one's gradient reaches the
table, as numpy's `table[index] += values` does with repeated indices) and
the true sum over every token (`exact_gradient=True`).
"""

from typing import Any, Callable, Dict, List, Sequence, Tuple, TypeVar, Union, cast

import numpy
from spacy.attrs import ORTH
from spacy.ml._character_embed import init as character_embed_init
from spacy.tokens import Doc, Span
from spacy.vocab import Vocab
from thinc.api import Model
from thinc.types import Floats2d, Floats3d, Ints2d

from ..typed_api import asarray, asarray2i, has_string, unflatten

T = TypeVar("T")

# ORTH key -> the word's bytes in the order 0, -1, 1, -2, ... (255-padded), per nC.
_UTF8_ENDS: Dict[int, Dict[int, bytes]] = {}
_MAX_CACHED_WORDS = 500_000  # then start again (under 100 MB)


def batch_features(columns: Sequence[Union[str, int]]) -> Model[List[Union[Doc, Span]], List[Ints2d]]:
    """spaCy's FeatureExtractor, with one host-to-device copy per batch."""
    return Model("extract_features", _features_forward, attrs={"columns": columns})


def _features_forward(model: Model, docs: List[Union[Doc, Span]], is_train: bool) -> Tuple[List[Ints2d], Callable]:
    columns = model.attrs["columns"]
    if isinstance(columns, (str, int)):
        columns = [columns]
    arrays = [token_array(doc, columns).reshape(len(doc), len(columns)) for doc in docs]
    if not arrays:
        return [], lambda d_features: []
    features = asarray2i(model.ops, numpy.concatenate(arrays), dtype="uint64")
    return unflatten(model.ops, features, [len(a) for a in arrays]), lambda d_features: []


def token_array(doc: Union[Doc, Span], columns) -> numpy.ndarray:
    """`Doc.to_array(columns)` of a doc, a span's tokens, or any object with a `to_array`."""
    if isinstance(doc, Span):
        return doc.doc.to_array(columns)[doc.start : doc.end]
    return doc.to_array(columns)


def utf8_ends(docs: Sequence[Union[Doc, Span]], nC: int) -> numpy.ndarray:
    """`Doc.to_utf8_array(nr_char=nC)` of every token of the docs, stacked:
    shape (n_tokens, nC), uint8, each word's bytes taken alternately from its
    start and its end (0, -1, 1, -2, ...), 255 where the word is shorter."""
    cache = _UTF8_ENDS.setdefault(nC, {})
    rows, inverse = per_distinct_word(docs, cache, lambda word: _ends_first(word.encode("utf8"), nC))
    table = numpy.frombuffer(b"".join(rows), dtype="uint8").reshape(len(rows), nC)
    return table[inverse]


def per_distinct_word(
    docs: Sequence[Union[Doc, Span]], cache: Dict[int, T], convert: Callable[[str], T]
) -> Tuple[List[T], numpy.ndarray]:
    """`convert` of each distinct word (ORTH) of the docs, computed once per
    process: `cache` keeps it by ORTH key (and starts again when large).

    RETURNS (Tuple[List[T], numpy.ndarray]): the values of the distinct words,
        and for every token of the docs the index of its word among them.
    """
    orths = [token_array(doc, [ORTH]).reshape(-1) for doc in docs]
    if not sum(len(o) for o in orths):
        return [], numpy.zeros((0,), dtype="int64")
    keys, inverse = numpy.unique(numpy.concatenate(orths).astype("uint64"), return_inverse=True)
    if len(cache) > _MAX_CACHED_WORDS:
        cache.clear()
    vocabs = list({id(doc.vocab): doc.vocab for doc in docs}.values())
    values = []
    for key in keys.tolist():
        value = cache.get(key)
        if value is None:
            value = cache[key] = convert(_text_of(key, vocabs))
        values.append(value)
    return values, inverse.reshape(-1)


def _text_of(key: int, vocabs: List[Vocab]) -> str:
    """The string of an ORTH key, from the first of the vocabs that has it."""
    for vocab in vocabs:
        if has_string(vocab.strings, key):
            return vocab.strings[key]
    raise KeyError(key)


def _ends_first(word: bytes, nC: int) -> bytes:
    """The bytes of `word` in the order 0, -1, 1, -2, ..., at most nC, padded with 255."""
    order = bytearray()
    start, end = 0, len(word) - 1
    while len(order) < nC and start <= end:
        order.append(word[start])
        start += 1
        if len(order) < nC and start <= end:
            order.append(word[end])
            end -= 1
    return bytes(order) + b"\xff" * (nC - len(order))


def byte_embed(nM: int, nC: int, exact_gradient: bool = False) -> Model[List[Doc], List[Floats2d]]:
    """spaCy's CharacterEmbed for a whole batch: one (n_tokens, nM * nC)
    array per doc, row i holding the embeddings of word i's nC bytes (see
    `utf8_ends`), each byte position with its own (256, nM) table."""
    return Model(
        "charembed",
        _byte_embed_exact if exact_gradient else _byte_embed_as_spacy,
        init=character_embed_init,
        dims={"nM": nM, "nC": nC, "nO": nM * nC, "nV": 256},
        params={"E": None},
    )


def _byte_embed_exact(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    return _byte_embed_forward(model, docs, exact_gradient=True)


def _byte_embed_as_spacy(model: Model, docs: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    return _byte_embed_forward(model, docs, exact_gradient=False)


def _byte_embed_forward(model: Model, docs: List[Doc], *, exact_gradient: bool) -> Tuple[List[Floats2d], Callable]:
    xp = model.ops.xp
    # xp arrays (numpy or cupy), indexed as Thinc's array types do not describe
    E: Any = model.get_param("E")  # shape: (nC, 256, nM)
    nC, nM = model.get_dim("nC"), model.get_dim("nM")
    lengths = [len(doc) for doc in docs]
    ids: Any = asarray(model.ops, utf8_ends(docs, nC))  # shape: (n_tokens, nC)
    positions = xp.arange(nC)
    vectors = E[positions, ids].reshape(len(ids), nC * nM)

    def backprop(d_output: List[Floats2d]) -> List:
        if not d_output:
            return []
        dY = xp.concatenate(d_output).reshape(-1, nM)  # row (token, position)
        rows = (positions * 256 + ids).reshape(-1)  # row of the flattened table
        if not exact_gradient:
            rows, dY = _last_in_each_doc(model, ids, lengths, rows, dY)
        dE = model.ops.alloc2f(nC * 256, nM)
        xp.add.at(dE, rows, dY)  # numpy: in index order (cupy 14 deprecates Thinc's scatter_add)
        model.inc_grad("E", cast(Floats3d, dE.reshape(E.shape)))
        return []

    return unflatten(model.ops, cast(Floats2d, vectors), lengths), backprop


def _last_in_each_doc(model: Model, ids, lengths: List[int], rows, dY):
    """spaCy's gradient: per doc, only the last token's entry for each
    (position, byte) row; sorted by doc so that the sums run in spaCy's order."""
    xp = model.ops.xp
    n_tokens, nC = ids.shape
    doc_of_token: Any = asarray(model.ops, numpy.repeat(numpy.arange(len(lengths)), lengths))  # an xp array
    keys = (doc_of_token[:, None].astype("int64") * (nC * 256) + rows.reshape(n_tokens, nC)).reshape(-1)
    _, first_from_end = xp.unique(keys[::-1], return_index=True)  # sorted by key: doc first
    last = len(keys) - 1 - first_from_end
    return rows[last], dY[last]
