"""The network's weights as numpy arrays in msgpack (srsly), readable without torch.

Thinc stores its own layers' parameters the same way (numpy arrays through
srsly's msgpack), so a pipeline's model file needs no other reader, and the
arrays sit inside the model bytes that the component's checksum covers.
Earlier releases stored `torch.save` bytes of the state dict (key "state"):
those need torch to read (`is_torch_format`).

A saved network is a msgpack map:

    {"config": {"network": settings}, "format": FORMAT, "arrays": {name: ndarray}}

with "arrays" None for a model saved before it was built.
"""

from typing import Any, Dict, Mapping, Optional

import numpy
import srsly

FORMAT = "spacy_crf.arrays.v1"
# the dtypes a weight may have
FLOAT_DTYPES = ("float32", "float64", "float16")


def dump_network(config: Mapping[str, Any], arrays: Optional[Mapping[str, numpy.ndarray]]) -> bytes:
    """The msgpack bytes of a network's settings and weights (None: not built)."""
    state = None if arrays is None else {name: numpy.ascontiguousarray(a) for name, a in arrays.items()}
    return srsly.msgpack_dumps({"config": dict(config), "format": FORMAT, "arrays": state})


def load_message(data: bytes) -> Dict[str, Any]:
    """The saved map, checked to be one of a network (either format)."""
    msg = srsly.msgpack_loads(data)
    if not isinstance(msg, dict) or ("state" not in msg and "arrays" not in msg):
        raise ValueError("no network in the data")
    return msg


def is_torch_format(msg: Mapping[str, Any]) -> bool:
    """Whether a saved map holds torch.save bytes (spacy-crf 1.x and earlier)."""
    return "arrays" not in msg and msg.get("state") is not None


def arrays_of(msg: Mapping[str, Any]) -> Optional[Dict[str, numpy.ndarray]]:
    """The weights of a saved map in the array format, checked: a name -> a
    numpy array of floats; None for a network saved before it was built."""
    if msg.get("format") != FORMAT:
        raise ValueError(f"unknown weights format {msg.get('format')!r}, expected {FORMAT!r}")
    state = msg["arrays"]
    if state is None:
        return None
    if not isinstance(state, dict):
        raise ValueError("the weights are not a map of names to arrays")
    arrays = {}
    for name, value in state.items():
        if not isinstance(name, str) or not isinstance(value, numpy.ndarray) or value.dtype.name not in FLOAT_DTYPES:
            raise ValueError(f"the weight {name!r} is not an array of floats")
        arrays[name] = numpy.array(value)  # a writable copy (msgpack's arrays are views of the bytes)
    return arrays
