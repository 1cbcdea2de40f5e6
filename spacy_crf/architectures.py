"""The registered architecture `spacy_crf.BiLSTMCRF.v1`: tok2vec -> BiLSTM-CRF.

The torch network sits behind Thinc's PyTorchWrapper. Its sizes (input width,
number of labels) are only known at `initialize`, so the wrapper is built then,
or by `build_crf_layer` when a trained pipeline is loaded.
"""
from typing import Any, Callable, List, Optional, Tuple

import numpy

import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v2, chain, torch2xp, xp2torch
from thinc.types import Floats2d

from .averaging_shim import AveragingPyTorchShim
from .chunking import chunk_lengths
from .errors import Errors
from .nn import BiLSTMCRF, CRFScores


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
) -> Model[List[Doc], CRFScores]:
    """Build a BiLSTM-CRF tagger on top of any tok2vec.

    tok2vec (Model[List[Doc], List[Floats2d]]): the token vectors, e.g. a
        spacy.Tok2Vec.v2, a spacy.Tok2VecListener.v1 or a transformer listener.
    hidden_width (int): LSTM hidden size per direction.
    depth (int): number of BiLSTM layers; 0 means a CRF on the tok2vec output.
    dropout (float): dropout on the BiLSTM outputs (and between its layers).
    crf (bool): False fixes the transition scores at zero: a per-token softmax
        trained with cross-entropy, for ablations.
    chunk_size (int): docs longer than this are cut into near-equal chunks,
        each its own CRF sequence (bounded memory, a short time loop); 0 never
        cuts. Docs up to this length are decoded whole.
    nO (Optional[int]): number of labels; set by the component from its labels.
    input_dropout (float): dropout on the token vectors entering the BiLSTM.
    RETURNS (Model[List[Doc], CRFScores]): padded CRF scores for a batch of docs.
    """
    crf_layer: Model[List[Floats2d], CRFScores] = Model(
        "bilstm_crf",
        _crf_layer_forward,
        init=_crf_layer_init,
        dims={"nI": None, "nO": nO},
        attrs={
            "hidden_width": hidden_width,
            "depth": depth,
            "dropout": dropout,
            "crf": crf,
            "chunk_size": chunk_size,
            "input_dropout": input_dropout,
        },
    )
    model = chain(tok2vec, crf_layer)
    model.set_ref("tok2vec", tok2vec)
    model.set_ref("output_layer", crf_layer)
    return model


def build_crf_layer(crf_layer: Model) -> None:
    """Create the torch network once nI and nO are known (idempotent)."""
    if crf_layer.layers:
        return
    nI = crf_layer.maybe_get_dim("nI")
    nO = crf_layer.maybe_get_dim("nO")
    if not nI or not nO:
        raise ValueError(Errors.E011.format(nI=nI, nO=nO))
    network = BiLSTMCRF(
        nI,
        nO,
        hidden_width=crf_layer.attrs["hidden_width"],
        depth=crf_layer.attrs["depth"],
        dropout=crf_layer.attrs["dropout"],
        learn_transitions=crf_layer.attrs["crf"],
        input_dropout=crf_layer.attrs["input_dropout"],
    )
    wrapper = PyTorchWrapper_v2(
        network, convert_inputs=_convert_inputs, convert_outputs=_convert_outputs
    )
    # Same shim, but averaged weights (use_averages = true) reach torch too.
    wrapper.shims[0] = AveragingPyTorchShim(network)
    crf_layer.layers.append(wrapper)


def _crf_layer_init(
    model: Model, X: Optional[List[Floats2d]] = None, Y: Any = None
) -> None:
    if X is not None and len(X) and not model.has_dim("nI"):
        model.set_dim("nI", int(X[0].shape[1]))
    build_crf_layer(model)


def _crf_layer_forward(
    model: Model, X: List[Floats2d], is_train: bool
) -> Tuple[CRFScores, Callable]:
    """Cut docs longer than chunk_size into chunks; score the chunks."""
    if not model.layers:
        raise ValueError(Errors.E009.format(name=model.name))
    xp = model.ops.xp
    doc_lengths = [len(x) for x in X]
    lengths = chunk_lengths(doc_lengths, model.attrs["chunk_size"])
    if len(lengths) == len(X):
        return model.layers[0](X, is_train)
    chunks = xp.split(xp.concatenate(X), numpy.cumsum(lengths)[:-1].tolist())
    scores, backprop_chunks = model.layers[0](chunks, is_train)

    def backprop(d_scores: CRFScores) -> List[Floats2d]:
        d_flat = xp.concatenate(backprop_chunks(d_scores))
        return xp.split(d_flat, numpy.cumsum(doc_lengths)[:-1].tolist())

    return scores, backprop


def _convert_inputs(
    model: Model, X: List[Floats2d], is_train: bool
) -> Tuple[ArgsKwargs, Callable[[ArgsKwargs], List[Floats2d]]]:
    """Pad the sequences into one (B, T, D) batch on the model's device."""
    ops = model.ops
    lengths = [len(x) for x in X]
    if max(lengths, default=0) == 0:
        width = X[0].shape[1] if X else model.shims[0]._model.n_inputs
        padded = ops.alloc3f(len(X), 1, width)  # T >= 1 keeps the LSTM happy
    else:
        padded = ops.pad(X)  # shape: (B, T, D)
    device = model.shims[0].device
    inputs = xp2torch(padded, requires_grad=is_train, device=device)
    lengths_cpu = torch.tensor(lengths, dtype=torch.long)

    def backprop(d_inputs: ArgsKwargs) -> List[Floats2d]:
        return ops.unpad(torch2xp(d_inputs.args[0]), lengths)

    return ArgsKwargs(args=(inputs, lengths_cpu), kwargs={}), backprop


def _convert_outputs(
    model: Model, X_Ytorch: Tuple[List[Floats2d], CRFScores], is_train: bool
) -> Tuple[CRFScores, Callable[[CRFScores], ArgsKwargs]]:
    """Hand the torch scores on as they are; route their gradients back."""
    _, scores = X_Ytorch

    def backprop(d_scores: CRFScores) -> ArgsKwargs:
        pairs = [
            (y, dy)
            for y, dy in zip(scores, d_scores)
            if dy is not None and y.requires_grad
        ]
        tensors, grads = zip(*pairs)
        return ArgsKwargs(args=(tensors,), kwargs={"grad_tensors": grads})

    return scores, backprop
