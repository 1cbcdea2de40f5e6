"""The Thinc side of spacy-crf: the registered architectures, the shim around
the torch network, the model's output (`CRFBatch`) and the loss the component
calls. The torch maths itself lives in `spacy_crf.nn`."""

from ..engine.batch import ArrayCRFBatch
from . import legacy  # noqa: F401  (registers the superseded architectures)
from .batch_loss import crf_batch_loss
from .bilstm_crf import (
    add_labels,
    any_shim,
    build_bilstm_crf_v4,
    check_quantize,
    crf_shim,
    first_non_finite_weight,
    is_built,
    set_constraints,
    set_label_classes,
    set_label_parts,
    set_quantize,
    torch_network,
    uses_array_engine,
    uses_label_classes,
    uses_label_parts,
)
from .char_cnn import build_char_cnn_v2
from .crf_batch import CRFBatch, merge_nbest
from .doc_scores import DocScores
from .embed import (
    build_hash_char_embed_v5,
    count_known_words,
)

__all__ = [
    "add_labels",
    "ArrayCRFBatch",
    "CRFBatch",
    "DocScores",
    "build_bilstm_crf_v4",
    "build_char_cnn_v2",
    "build_hash_char_embed_v5",
    "check_quantize",
    "count_known_words",
    "crf_batch_loss",
    "any_shim",
    "crf_shim",
    "first_non_finite_weight",
    "merge_nbest",
    "set_constraints",
    "set_label_classes",
    "set_label_parts",
    "set_quantize",
    "is_built",
    "torch_network",
    "uses_array_engine",
    "uses_label_classes",
    "uses_label_parts",
]
