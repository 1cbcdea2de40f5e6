"""Typed access to the parts of spaCy's and Thinc's run-time API that their
type stubs leave out or annotate more narrowly than they accept: every such
gap is bridged here, once, so that the rest of the package is checked by mypy
without ignores."""

from typing import Callable, List, Sequence, TypeVar, Union, cast

import numpy
from spacy import strings
from spacy.strings import StringStore
from spacy.tokens import MorphAnalysis, Token
from thinc.api import Ops
from thinc.types import ArrayXd, DTypes, Floats2d, Ints1d, Ints2d

# spacy.strings.hash_string (strings.pyi does not declare it): the function itself, not a wrapper
hash_string: Callable[[str], int] = strings.hash_string  # type: ignore[attr-defined]  # in strings.pyx only


def set_morph(token: Token, morph: Union[int, str, None]) -> None:
    """token.set_morph (spaCy 3.x; token.pyi does not declare it)."""
    token.set_morph(morph)  # type: ignore[attr-defined]  # declared in token.pyx, not in token.pyi


def morph_key(morph: MorphAnalysis) -> int:
    """morph.key, the hash of the analysis, 0 where unset (morphanalysis.pyi does not declare it)."""
    key: int = morph.key  # type: ignore[attr-defined]  # declared in morphanalysis.pyx, not in morphanalysis.pyi
    return key


def has_string(store: StringStore, key: Union[int, str]) -> bool:
    """`key in store`, a string or its hash (strings.pyi declares str only)."""
    return key in store  # type: ignore[operator]  # StringStore.__contains__ takes hashes too


ArrayT = TypeVar("ArrayT", Floats2d, Ints2d)


def unflatten(ops: Ops, X: ArrayT, lengths: Sequence[int]) -> List[ArrayT]:
    """ops.unflatten(X, lengths): the rows of X, split by lengths (Thinc takes
    any sequence of ints; its annotation says Ints1d)."""
    return cast(List[ArrayT], ops.unflatten(X, cast(Ints1d, lengths)))


def asarray(ops: Ops, array: numpy.ndarray) -> ArrayXd:
    """ops.asarray(array) of a numpy array (Thinc's annotation leaves numpy's own types out)."""
    return ops.asarray(cast(ArrayXd, array))


def asarray1i(ops: Ops, array: numpy.ndarray) -> Ints1d:
    """ops.asarray1i(array) of a numpy array (Thinc's annotation leaves numpy's own types out)."""
    return ops.asarray1i(cast(Ints1d, array))


def asarray2i(ops: Ops, array: numpy.ndarray, *, dtype: DTypes) -> Ints2d:
    """ops.asarray2i(array, dtype=dtype) of a numpy array (Thinc's annotation leaves numpy's own types out)."""
    return ops.asarray2i(cast(Ints2d, array), dtype=dtype)
