"""The shim of a BiLSTMCRF model where torch is not installed: it holds the
network's weights as numpy arrays (spacy_crf.engine) for prediction, reads
and writes them in the torch-free format, and refuses training (E050).

It has the methods of `CRFShim` that loading and prediction call (settings,
label classes and parts, constraints), so the architecture builds the same
model either way, and a pipeline saved with torch loads without it."""

from typing import Any, List, Optional, Sequence, Tuple

from thinc.api import Shim

from ..engine import weights
from ..engine.network import ArrayNetwork
from ..errors import Errors
from ..optional import EXTRA, torch_needed


class ServingShim(Shim):
    """A prediction-only stand-in for CRFShim, without torch."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(None, config={"network": dict(settings)})
        self.label_classes: Optional[List[int]] = None
        self.label_parts: Optional[List[List[int]]] = None
        self.quantize = "none"
        self._network: Optional[ArrayNetwork] = None
        self._constraints: Optional[Tuple[Any, Any, Any]] = None

    @property
    def network(self) -> Optional[ArrayNetwork]:
        """RETURNS (Optional[ArrayNetwork]): the network, None until loaded."""
        return self._network

    def array_network(self) -> ArrayNetwork:
        assert self._network is not None  # checked by the caller (E009)
        return self._network

    def set_quantize(self, mode: str) -> None:
        if mode != "none":
            raise torch_needed(f"quantize={mode!r}")
        self.quantize = mode

    def set_label_classes(self, classes: Optional[Sequence[int]]) -> None:
        self.label_classes = None if classes is None else [int(c) for c in classes]

    def set_label_parts(self, parts: Optional[Sequence[Sequence[int]]]) -> None:
        self.label_parts = None if parts is None else [[int(p) for p in label] for label in parts]

    def set_constraints(self, masks: Optional[Tuple[Any, Any, Any]]) -> None:
        self._constraints = masks
        if self._network is not None:
            self._network.set_constraints(masks)

    def build(self, n_inputs: int, n_labels: int) -> Any:
        raise torch_needed("Initializing a model (training)")

    def grow(self, donors: Sequence[int], **kwargs: Any) -> Any:
        raise torch_needed("Adding labels to a trained model")

    def __call__(self, inputs: Any, is_train: bool) -> Any:
        raise torch_needed("Training" if is_train else "The torch engine (SPACY_CRF_ENGINE=torch)")

    def predict(self, inputs: Any) -> Any:
        raise torch_needed("The torch engine (SPACY_CRF_ENGINE=torch)")

    def begin_update(self, inputs: Any) -> Any:
        raise torch_needed("Training")

    def finish_update(self, optimizer: Any) -> None:
        raise torch_needed("Training")

    def use_params(self, params: Any) -> Any:
        raise torch_needed("Training with averaged weights")

    def to_device(self, device_type: str, device_id: int) -> None:
        if device_type != "cpu":
            raise torch_needed("Prediction on a GPU")

    def to_bytes(self) -> bytes:
        arrays = None if self._network is None else self._network.arrays
        return weights.dump_network(self.cfg, arrays)

    def from_bytes(self, bytes_data: bytes) -> "ServingShim":
        """Load the settings and weights saved in the torch-free format;
        weights saved as torch.save bytes raise E051 (re-save them)."""
        msg = weights.load_message(bytes_data)
        if weights.is_torch_format(msg):
            raise ImportError(Errors.E051.format(extra=EXTRA))
        arrays = weights.arrays_of(msg) if "arrays" in msg else None
        if arrays is None:
            self._network = None
            return self
        saved = dict((msg.get("config") or {}).get("network") or {})
        configured = self.cfg["network"]
        for key in ("hidden_width", "depth", "learn_transitions", "transitions", "emissions"):
            if key in saved and key in configured and saved[key] != configured[key]:
                raise ValueError(f"{key} is {saved[key]!r} in the file, {configured[key]!r} in the config")
        network = ArrayNetwork(saved, arrays)
        self.cfg = {"network": saved}
        self.label_classes = saved.get("classes")
        self.label_parts = saved.get("parts")
        self._network = network
        network.set_constraints(self._constraints)
        return self
