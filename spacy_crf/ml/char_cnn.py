"""`spacy_crf.CharCNN.v2`: a character CNN over the whole word (Ma & Hovy, 2016).

Each word's UTF-8 bytes, between a start and an end marker, are embedded;
each byte's vector is concatenated with those of the `window` bytes on either
side (Thinc's seq2col, which stops at the word's edges); a Maxout layer maps
each window to `width` features; the word's vector is the maximum of each
feature over its positions. HashCharEmbed reads the first and last few bytes
at fixed positions; this reads every byte of the word, wherever it is.

Each distinct word (ORTH) of a batch is encoded once and copied to its
tokens; the gradients of its tokens are summed back into it. A word's bytes
are looked up once per process. Thinc's code runs on NumpyOps and on CupyOps;
on NumpyOps engine/char_cnn_numba.py's loops run instead (the same vectors and
gradients to float rounding, much faster), unless SPACY_CRF_KERNELS=torch asks
for the reference code or Numba cannot be set up. CharCNN.v1 is in
spacy_crf/ml/legacy.py.
"""

import importlib.util
import warnings
from functools import lru_cache
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy
from spacy.tokens import Doc, Span
from spacy.util import registry
from thinc.api import Maxout, Model, NumpyOps, uniform_init
from thinc.types import Floats2d

from ..engine.modes import kernel_mode
from ..errors import Warnings
from ..typed_api import asarray, asarray1i, unflatten
from .features import per_distinct_word

# Byte values 0-255, then the markers around every word.
WORD_START, WORD_END = 256, 257
N_SYMBOLS = 258

# ORTH key -> the word's symbol ids, per max_bytes.
_WORD_SYMBOLS: Dict[int, Dict[int, numpy.ndarray]] = {}


@registry.architectures("spacy_crf.CharCNN.v2")
def build_char_cnn_v2(*, width: int, nM: int, window: int, nP: int, max_bytes: int) -> Model[List[Doc], List[Floats2d]]:
    """Encode each token by a CNN over the bytes of its word (a word encoder
    for `spacy_crf.HashCharEmbed.v5`).

    Args:
        width: The output width (the CNN's filters).
        nM: The width of each byte's embedding.
        window: The bytes on each side of a position that its filters see (1: trigrams).
        nP: The Maxout pieces of the convolution.
        max_bytes: Longer words are read by their first and last max_bytes / 2 bytes (URLs, numbers);
            the markers come on top.
    """
    if max_bytes < 2:
        raise ValueError(f"max_bytes must be at least 2, not {max_bytes}")
    conv = Maxout(width, nM * (2 * window + 1), nP=nP, normalize=False, dropout=None)
    return Model(
        "char_cnn",
        _forward,
        init=_init,
        layers=[conv],
        params={"E": None},
        dims={"nO": width, "nM": nM, "nV": N_SYMBOLS, "nW": window},
        attrs={"max_bytes": max_bytes},
    )


def _init(model: Model, X=None, Y=None) -> None:
    model.set_param("E", uniform_init(model.ops, (model.get_dim("nV"), model.get_dim("nM"))))
    model.layers[0].initialize()


def word_symbols(
    docs: Sequence[Union[Doc, Span]], max_bytes: int
) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The symbols of the distinct words of the docs.

    RETURNS: (symbols, lengths, inverse): the distinct words' symbol ids one
        after another (int32), the number of symbols of each distinct word
        (int32), and for every token of the docs the index of its word.
    """
    cache = _WORD_SYMBOLS.setdefault(max_bytes, {})
    words, inverse = per_distinct_word(docs, cache, lambda word: _symbols(word.encode("utf8"), max_bytes))
    if not words:
        return numpy.zeros((0,), dtype="int32"), numpy.zeros((0,), dtype="int32"), inverse
    lengths = numpy.asarray([len(w) for w in words], dtype="int32")
    return numpy.concatenate(words), lengths, inverse


def _symbols(word: bytes, max_bytes: int) -> numpy.ndarray:
    if len(word) > max_bytes:
        half = max_bytes // 2
        word = word[:half] + word[len(word) - (max_bytes - half) :]
    return numpy.asarray([WORD_START, *word, WORD_END], dtype="int32")


def _forward(model: Model, docs: List[Union[Doc, Span]], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    ops = model.ops
    width = model.get_dim("nO")
    doc_lengths = [len(doc) for doc in docs]
    symbols_h, lengths_h, inverse_h = word_symbols(docs, model.attrs["max_bytes"])
    if not len(inverse_h):
        return [ops.alloc2f(n, width) for n in doc_lengths], lambda dY: []
    fused = _fused_encoder(ops)
    if fused is None:
        words, backprop_words = _encode_words(model, symbols_h, lengths_h, is_train)
    elif is_train:
        words, backprop_words = _fused_training(model, fused, symbols_h, lengths_h)
    else:
        conv = model.layers[0]
        words = fused.encode_words(symbols_h, lengths_h, model.get_param("E"), conv.get_param("W"), conv.get_param("b"))

        def backprop_words(d_words: Floats2d) -> None:
            # prediction keeps nothing for gradients: the training forward again, for a caller that asks
            _fused_training(model, fused, symbols_h, lengths_h)[1](d_words)

    inverse = asarray(ops, inverse_h)
    tokens = words[inverse]  # shape: (n_tokens, width)

    def backprop(dY: List[Floats2d]) -> List:
        d_words = ops.alloc2f(len(lengths_h), width)
        ops.xp.add.at(d_words, inverse, ops.xp.concatenate(dY))
        backprop_words(d_words)
        return []

    return unflatten(ops, tokens, doc_lengths), backprop


def _encode_words(
    model: Model, symbols_h: numpy.ndarray, lengths_h: numpy.ndarray, is_train: bool
) -> Tuple[Floats2d, Callable[[Floats2d], None]]:
    """The distinct words' vectors by Thinc's layers (any ops; training), and
    their backprop, which adds the gradients of E and of the convolution."""
    ops = model.ops
    conv = model.layers[0]
    E = cast(Floats2d, model.get_param("E"))  # shape: (nV, nM)
    window = model.get_dim("nW")
    symbols = asarray1i(ops, symbols_h)
    lengths = asarray1i(ops, lengths_h)
    windows = ops.seq2col(E[symbols], window, lengths=lengths)  # shape: (n_symbols, nM * (2 * nW + 1))
    features, backprop_conv = conv(windows, is_train)  # shape: (n_symbols, width)
    words, which = ops.reduce_max(features, lengths)  # shape: (n_words, width)

    def backprop(d_words: Floats2d) -> None:
        d_features = ops.backprop_reduce_max(d_words, which, lengths)
        d_embedded = ops.backprop_seq2col(backprop_conv(d_features), window, lengths=lengths)
        dE = ops.alloc2f(*E.shape)
        ops.xp.add.at(dE, symbols, d_embedded)
        model.inc_grad("E", dE)

    return words, backprop


def _fused_training(
    model: Model, fused: ModuleType, symbols_h: numpy.ndarray, lengths_h: numpy.ndarray
) -> Tuple[Floats2d, Callable[[Floats2d], None]]:
    """The distinct words' vectors by char_cnn_numba's training loop, and
    their backprop, which adds the gradients of E and of the convolution."""
    conv = model.layers[0]
    words, backprop_fused = fused.encode_words_for_training(
        symbols_h, lengths_h, model.get_param("E"), conv.get_param("W"), conv.get_param("b")
    )

    def backprop(d_words: Floats2d) -> None:
        dE, dW, db = backprop_fused(d_words)
        model.inc_grad("E", dE)
        conv.inc_grad("W", dW)
        conv.inc_grad("b", db)

    return words, backprop


def _fused_encoder(ops) -> Optional[ModuleType]:
    """char_cnn_numba where it can run: NumpyOps, kernels not "torch", Numba set up."""
    if not isinstance(ops, NumpyOps) or kernel_mode() == "torch":
        return None
    return _numba_module()


@lru_cache(maxsize=1)
def _numba_module() -> Optional[ModuleType]:
    """char_cnn_numba, or None where Numba is not installed or cannot set up
    its compiled code (e.g. no writable cache folder), with a warning."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        from ..engine import char_cnn_numba
    except (ImportError, RuntimeError, OSError) as error:
        warnings.warn(Warnings.W002.format(error=error), stacklevel=2)
        return None
    return char_cnn_numba
