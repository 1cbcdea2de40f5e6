"""The registered architecture `spacy_crf.BiLSTMCRF.v4`: tok2vec -> BiLSTM-CRF
(the earlier versions are in spacy_crf/ml/legacy.py).

The torch network sits behind Thinc's PyTorchWrapper with a `CRFShim`, which
builds it once the input width and the number of labels are known (at
`initialize`, or from a saved model). The layer cuts long docs into chunks and
returns a `CRFBatch`, which maps the chunks back to docs.
"""

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, Union, cast

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, chain
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.types import Floats2d, Floats3d

from ..engine.batch import ArrayCRFBatch
from ..engine.modes import engine_mode
from ..engine.network import EMISSIONS, TRANSITIONS
from ..errors import Errors
from ..optional import has_torch, require_torch, torch_needed
from .arguments import FLAG, POSITIVE, RATE, WHOLE, check_arguments
from .crf_batch import CRFBatch, row_layout
from .serving_shim import ServingShim

if TYPE_CHECKING or has_torch():
    import torch
    from thinc.api import torch2xp, xp2torch

    from ..nn import BiLSTMCRF, CRFScores, PackedScores
    from ..nn import quantize as quantization
    from .shim import CRFShim

# spacy_crf.nn.quantize.MODES, known without torch
QUANTIZE_MODES = ("none", "int8", "bf16")
# the model's output: the torch path's scores, or the torch-free engine's
ModelOutput = Union[CRFBatch, ArrayCRFBatch]
# either shim: CRFShim (torch installed) or ServingShim
AnyShim = Union["CRFShim", ServingShim]


@registry.architectures("spacy_crf.BiLSTMCRF.v4")
def build_bilstm_crf_v4(
    tok2vec: Model[List[Doc], List[Floats2d]],
    *,
    hidden_width: int,
    depth: int,
    dropout: float,
    input_dropout: float,
    crf: bool,
    chunk_size: int,
    transitions: str,
    emissions: str,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFBatch]:
    """A BiLSTM-CRF on top of any tok2vec: docs in, CRF scores out.

    Args:
        tok2vec: The token vectors, e.g. `spacy_crf.HashCharEmbed.v5`, a `spacy.Tok2VecListener.v1` or a
            transformer listener.
        hidden_width: The LSTM's hidden size per direction.
        depth: The number of BiLSTM layers; 0 puts the CRF straight on the tok2vec.
        dropout: Dropout on the BiLSTM's outputs (and between its layers).
        input_dropout: Dropout on the token vectors entering the BiLSTM.
        crf: False fixes the transition scores at zero: a per-token softmax trained with cross-entropy,
            for ablations.
        chunk_size: Docs longer than this are cut into near-equal chunks, each its own CRF sequence
            (bounded memory, a short time loop); 0 never cuts.
        transitions: "full", a score for every pair of labels (K * K); "factored", a score for every pair
            of the labels' classes plus one for leaving and one for entering each label (C * C + 2K),
            exact and O(K * C) a token, for large label sets whose labels have a class (crf_morphologizer's
            bundles by their UPOS; crf_tagger's "tag+pos").
        emissions: "full", a linear layer to the labels; "composed", each label's score the sum of its
            parts' scores plus a bias, for labels made of parts (crf_morphologizer's targets, crf_tagger's
            "tag+pos").
        nO: The number of labels; set by the component from its labels.
    """
    check_arguments(
        "spacy_crf.BiLSTMCRF.v4",
        hidden_width=(hidden_width, POSITIVE),
        depth=(depth, WHOLE),
        dropout=(dropout, RATE),
        input_dropout=(input_dropout, RATE),
        crf=(crf, FLAG),
        chunk_size=(chunk_size, WHOLE),
    )
    if transitions not in TRANSITIONS:
        raise ValueError(Errors.E022.format(value=transitions, options=", ".join(TRANSITIONS)))
    if emissions not in EMISSIONS:
        raise ValueError(Errors.E028.format(value=emissions, options=", ".join(EMISSIONS)))
    shim_class = CRFShim if has_torch() else ServingShim
    shim = shim_class(
        hidden_width=hidden_width,
        depth=depth,
        dropout=dropout,
        learn_transitions=crf,
        input_dropout=input_dropout,
        transitions=transitions,
        emissions=emissions,
    )
    wrapper: Model[List[Floats2d], Union["CRFScores", "PackedScores"]] = Model(
        "pytorch",
        pytorch_forward,
        attrs={"convert_inputs": _convert_inputs, "convert_outputs": _convert_outputs},
        shims=[shim],
        dims={"nI": None, "nO": None},
    )
    crf_layer: Model[List[Floats2d], CRFBatch] = Model(
        "bilstm_crf",
        _crf_layer_forward,
        init=_crf_layer_init,
        layers=[wrapper],
        dims={"nI": None, "nO": nO},
        attrs={"chunk_size": chunk_size},
    )
    model: Model[List[Doc], CRFBatch] = chain(tok2vec, crf_layer)
    model.set_ref("tok2vec", tok2vec)
    model.set_ref("output_layer", crf_layer)
    return model


def crf_shim(model: Model) -> "CRFShim":
    """The torch shim of a BiLSTMCRF model (or of its output layer); without
    torch, E050 naming what needs it (see `any_shim`)."""
    shim = any_shim(model)
    if isinstance(shim, ServingShim):
        require_torch("This use of the model")
    return cast("CRFShim", shim)


def any_shim(model: Model) -> AnyShim:
    """The shim of a BiLSTMCRF model (or of its output layer): CRFShim, or
    ServingShim where torch is not installed."""
    layer = model.get_ref("output_layer") if model.has_ref("output_layer") else model
    return cast(AnyShim, layer.layers[0].shims[0])


def is_built(model: Model) -> bool:
    """Whether the model's network is built (initialized or loaded)."""
    return any_shim(model).network is not None


def torch_network(model: Model) -> Optional["BiLSTMCRF"]:
    """RETURNS (Optional[BiLSTMCRF]): the model's torch network, None until built."""
    return crf_shim(model).network


def uses_array_engine(model: Model) -> bool:
    """Whether prediction runs the torch-free engine: always without torch;
    with it, where SPACY_CRF_ENGINE is "numpy" ("auto" is torch: see
    `spacy_crf.engine.modes.engine_mode`)."""
    mode = engine_mode()
    if isinstance(any_shim(model), ServingShim):
        if mode == "torch":
            raise torch_needed("SPACY_CRF_ENGINE=torch")
        return True
    return mode == "numpy"


def set_constraints(model: Model, masks: Optional[Sequence[numpy.ndarray]]) -> None:
    """Give the CRF hard constraints: bool masks (K, K) transitions, (K,)
    start, (K,) end, as from `spacy_crf.constraints.allowed_transitions`; None
    allows everything. They hold across saving and loading the weights."""
    any_shim(model).set_constraints(None if masks is None else cast(Tuple[Any, Any, Any], tuple(masks)))


def add_labels(
    model: Model,
    donors: Sequence[int],
    *,
    classes: Optional[Sequence[int]] = None,
    class_sources: Optional[Sequence[int]] = None,
    parts: Optional[Sequence[Sequence[int]]] = None,
    part_sources: Optional[Sequence[int]] = None,
) -> None:
    """Add labels to a built model, after its old ones, each starting from
    an old label (its donor: see spacy_crf.nn.growth and
    spacy_crf.targets.growth_plan): no decoded path changes until it is
    trained. Constraints are dropped: set them anew for all the labels."""
    network = crf_shim(model).grow(
        donors, classes=classes, class_sources=class_sources, parts=parts, part_sources=part_sources
    )
    model.get_ref("output_layer").set_dim("nO", int(network.start.shape[0]), force=True)


def check_quantize(mode: str, name: str) -> None:
    """Raise E026 for an unknown quantize mode, E027 for "int8" where this
    torch cannot quantize (`name`: the component's)."""
    if mode not in QUANTIZE_MODES:
        raise ValueError(Errors.E026.format(name=name, value=mode, options=list(QUANTIZE_MODES)))
    if mode != "none":
        require_torch(f"quantize={mode!r}")
    if mode == "int8" and not quantization.available():
        raise ValueError(Errors.E027.format(name=name, version=torch.__version__))


def set_quantize(model: Model, mode: str) -> None:
    """ "none", "int8" or "bf16": predict on the CPU with an int8 (bfloat16)
    copy of the torch network (spacy_crf.nn.quantize); training and saving
    are unchanged."""
    any_shim(model).set_quantize(mode)


def set_label_classes(model: Model, classes: Optional[Sequence[int]]) -> None:
    """Give the network the class id (0..C-1) of each label, before it is
    built: factored transitions need them; full ones ignore them."""
    any_shim(model).set_label_classes(classes)


def set_label_parts(model: Model, parts: Optional[Sequence[Sequence[int]]]) -> None:
    """Give the network the part ids of each label before it is built:
    composed emissions need them; full ones ignore them."""
    any_shim(model).set_label_parts(parts)


def uses_label_parts(model: Model) -> bool:
    """Whether the model's emissions are composed from the labels' parts."""
    return any_shim(model).cfg["network"].get("emissions") == "composed"


def uses_label_classes(model: Model) -> bool:
    """Whether the model's transitions are factored by the labels' classes."""
    return any_shim(model).cfg["network"].get("transitions") == "factored"


def _crf_layer_init(model: Model, X: Optional[List[Floats2d]] = None, Y: Any = None) -> None:
    """Build a fresh network for nI (from X) and nO (set by the component)."""
    if X is not None and len(X):
        model.set_dim("nI", int(X[0].shape[1]), force=True)
    nI, nO = model.maybe_get_dim("nI"), model.maybe_get_dim("nO")
    if not nI or not nO:
        raise ValueError(Errors.E011.format(nI=nI, nO=nO))
    any_shim(model).build(nI, nO)


def predict_by_pieces(model: Model, docs: List[Doc], pieces: Sequence[Sequence[int]]) -> ModelOutput:
    """`model.predict(docs)`, with each doc read as its consecutive pieces
    (e.g. its sentences): the BiLSTM and the CRF read each piece as a row of
    its own (cut by chunk_size where longer), as they would a doc of its own;
    the tok2vec reads the whole doc (per token for HashCharEmbed and the
    character CNN, so the rows are then those of the pieces as docs).

    model (Model[List[Doc], CRFBatch]): a built spacy_crf.BiLSTMCRF model.
    docs (List[Doc]): the docs.
    pieces (Sequence[Sequence[int]]): per doc, the lengths of its pieces, in
        order, summing to the doc's length.
    RETURNS (ModelOutput): the scores, one row per piece (or chunk of one).
    """
    if len(pieces) != len(docs):
        raise ValueError(f"{len(pieces)} lists of pieces for {len(docs)} docs")
    for doc, doc_pieces in zip(docs, pieces):
        if not len(doc_pieces) or sum(doc_pieces) != len(doc) or any(n < 0 for n in doc_pieces):
            raise ValueError(f"the pieces {list(doc_pieces)} do not cut a doc of {len(doc)} tokens")
    X = model.get_ref("tok2vec").predict(docs)
    return _score_pieces(model.get_ref("output_layer"), X, pieces, is_train=False)[0]


def _crf_layer_forward(model: Model, X: List[Floats2d], is_train: bool) -> Tuple[ModelOutput, Callable]:
    """Cut docs longer than chunk_size into chunks; score the chunks."""
    return _score_pieces(model, X, [[len(x)] for x in X], is_train)


def _score_pieces(
    model: Model, X: List[Floats2d], pieces: Sequence[Sequence[int]], is_train: bool
) -> Tuple[ModelOutput, Callable]:
    """Score each doc's pieces (cut where longer than chunk_size) as rows."""
    if not is_built(model):
        raise ValueError(Errors.E009.format(name=model.name))
    xp = model.ops.xp
    chunk_size = model.attrs["chunk_size"]
    doc_lengths, lengths, rows_per_doc = row_layout(pieces, chunk_size)
    if not is_train and uses_array_engine(model):
        arrays = cast(List[numpy.ndarray], X)
        rows = arrays if len(lengths) == len(X) else numpy.split(numpy.concatenate(arrays), numpy.cumsum(lengths)[:-1])
        scores = any_shim(model).array_network().scores(rows)
        return ArrayCRFBatch(scores, doc_lengths, lengths, rows_per_doc), _no_backprop
    if isinstance(any_shim(model), ServingShim):
        require_torch("Training")
    if len(lengths) == len(X):
        scores, backprop_rows = model.layers[0](X, is_train)
    else:
        chunks = xp.split(xp.concatenate(X), numpy.cumsum(lengths)[:-1].tolist())
        scores, backprop_rows = model.layers[0](chunks, is_train)

    def backprop(d_batch: CRFBatch) -> List[Floats2d]:
        d_rows = backprop_rows(d_batch.scores)
        if len(lengths) == len(X):
            return d_rows
        return xp.split(xp.concatenate(d_rows), numpy.cumsum(doc_lengths)[:-1].tolist())

    return CRFBatch(scores, doc_lengths, lengths, rows_per_doc), backprop


def _no_backprop(d_batch: Any) -> Any:
    raise ValueError("prediction on the torch-free engine has no gradient")


def joined_rows(X: List[Floats2d]) -> Floats2d:
    """The arrays one after another: without a copy where they are
    consecutive rows of one C-contiguous buffer (the tok2vec's output, or
    chunks split from one array), else `concatenate`. Numpy arrays."""
    arrays = cast(List[numpy.ndarray], X)
    parts = [x for x in arrays if len(x)]
    first = parts[0]
    itemsize, width = first.itemsize, first.shape[1]
    consecutive = all(
        x.base is not None
        and x.base is first.base
        and x.flags.c_contiguous
        and x.dtype == first.dtype
        and x.shape[1] == width
        for x in parts
    ) and all(b.ctypes.data == a.ctypes.data + a.nbytes for a, b in zip(parts, parts[1:]))
    if not consecutive:
        return cast(Floats2d, numpy.concatenate(arrays))
    total = sum(len(x) for x in parts)
    joined = numpy.lib.stride_tricks.as_strided(first, shape=(total, width), strides=(itemsize * width, itemsize))
    return cast(Floats2d, joined)


def _convert_inputs(
    model: Model, X: List[Floats2d], is_train: bool
) -> Tuple[ArgsKwargs, Callable[[ArgsKwargs], List[Floats2d]]]:
    """The sequences as one batch on the model's device: on the CPU their
    tokens one after another (the network pads only what it runs), elsewhere
    padded into (B, T, D)."""
    ops = model.ops
    lengths = [len(x) for x in X]
    device = cast("CRFShim", model.shims[0]).device
    lengths_cpu = torch.tensor(lengths, dtype=torch.long)
    network = cast("CRFShim", model.shims[0]).network
    assert network is not None  # _score_pieces raised E009 otherwise
    width = X[0].shape[1] if X else network.n_inputs
    if device.type == "cpu":
        tokens = joined_rows(X) if sum(lengths) else ops.alloc2f(0, width)
        inputs = xp2torch(tokens, requires_grad=is_train, device=device)
        ends = numpy.cumsum(lengths)[:-1].tolist()

        def backprop(d_inputs: ArgsKwargs) -> List[Floats2d]:
            return ops.xp.split(torch2xp(d_inputs.args[0]), ends) if X else []

    else:
        if max(lengths, default=0) == 0:
            padded = ops.alloc3f(len(X), 1, width)  # T >= 1 keeps the LSTM happy
        else:
            padded = ops.pad(X)  # shape: (B, T, D)
        inputs = xp2torch(padded, requires_grad=is_train, device=device)

        def backprop(d_inputs: ArgsKwargs) -> List[Floats2d]:
            return cast(List[Floats2d], ops.unpad(cast(Floats3d, torch2xp(d_inputs.args[0])), lengths))

    # prediction on the CPU keeps the emissions packed (CRFBatch decodes them
    # as they are and pads them only for the other methods)
    kwargs = {"packed": True} if not is_train and device.type == "cpu" else {}
    return ArgsKwargs(args=(inputs, lengths_cpu), kwargs=kwargs), backprop


def _convert_outputs(
    model: Model, X_Ytorch: Tuple[List[Floats2d], Union["CRFScores", "PackedScores"]], is_train: bool
) -> Tuple[Union["CRFScores", "PackedScores"], Callable[["CRFScores"], ArgsKwargs]]:
    """Hand the torch scores on as they are (packed in prediction on the
    CPU); route their gradients back."""
    _, scores = X_Ytorch

    def backprop(d_scores: "CRFScores") -> ArgsKwargs:
        # in training the scores are padded (CRFScores), and each field with a gradient is a tensor
        padded = cast(Tuple[torch.Tensor, ...], scores)
        pairs = [(y, dy) for y, dy in zip(padded, d_scores) if dy is not None and y.requires_grad]
        tensors, grads = zip(*pairs)
        return ArgsKwargs(args=(tensors,), kwargs={"grad_tensors": grads})

    return scores, backprop


def first_non_finite_weight(model: Model) -> Optional[str]:
    """The name of the first weight of a BiLSTMCRF model (its Thinc layers'
    parameters, then the torch network's state) that holds NaN or inf; None
    if every weight is finite."""
    for node in model.walk():
        for name in node.param_names:
            if node.has_param(name) and not bool(node.ops.xp.isfinite(node.get_param(name)).all()):
                return f"{node.name}.{name}"
    shim = any_shim(model)
    if isinstance(shim, ServingShim):
        found = None if shim.network is None else shim.network.first_non_finite()
        return None if found is None else f"network.{found}"
    network = torch_network(model)
    if network is not None:
        for name, tensor in network.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                return f"network.{name}"
    return None
