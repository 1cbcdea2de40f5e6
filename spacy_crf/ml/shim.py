"""The Thinc shim around the torch network: it builds the network once its
sizes are known, saves those sizes with the weights, and loads weights only.

- The network (`spacy_crf.nn.BiLSTMCRF`) needs its input width and label
  count, known at `initialize`. Until then the shim holds no network; when a
  trained pipeline is loaded, `from_bytes` rebuilds it from the saved sizes
  (files from spacy-crf 0.1.0, which did not save them, give them through the
  shapes of their weights). The component's `from_disk` therefore needs no
  knowledge of the network.
- Loading never runs code from the file: the weights are read with
  `torch.load(weights_only=True)` (Thinc's shim uses plain `torch.load`, which
  unpickles arbitrary objects on torch < 2.6).
- `use_params` finds the optimizer's averaged weights: Thinc's optimizer keys
  torch parameters `(shim.id, name)`, while `PyTorchShim.use_params` only
  looks for `"pytorch_{id}_{name}"`, so with `use_averages = true` the torch
  averages were never used. Both kinds of key are accepted.
- Prediction never switches the network between train() and eval() (Thinc's
  shim does, so a concurrent call could run with dropout on): it runs the
  network's eval view, which shares its weights (spacy_crf.nn.quantize), so
  any number of threads may predict at once. With `set_quantize("int8")` (or
  "bf16"), prediction on the CPU runs an int8 (bfloat16) copy of the network
  instead, made at the first prediction after the weights changed (an
  update, a load, averaged weights, constraints); training and saving always
  use the float32 network.
- The optimizer's updates are written into the parameters' own memory
  (Thinc's shim makes each parameter a new tensor): the LSTM's weights stay
  the one contiguous buffer that cuDNN reads, with no re-flattening per step
  and no "weights are not part of single contiguous chunk" copies per call.
"""

import contextlib
import io
import pickle
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, cast

import torch
from thinc.api import (
    ArgsKwargs,
    PyTorchShim,
    get_torch_default_device,
    torch2xp,
    xp2torch,
)

from ..engine import weights
from ..engine.network import ArrayNetwork, arrays_from_state
from ..errors import Errors, UnsafeModelError
from ..nn import BiLSTMCRF
from ..nn import quantize as quantization
from ..nn.growth import grown_network

# The network's settings that decide the shapes of its weights.
STRUCTURAL = ("hidden_width", "depth", "learn_transitions", "transitions", "emissions")
# What a file saved before a setting existed was made with.
BEFORE_THE_SETTING = {"transitions": "full", "emissions": "full"}


class CRFShim(PyTorchShim):
    """A PyTorchShim for a BiLSTMCRF that is built when its sizes are known.

    hidden_width, depth, dropout, learn_transitions, input_dropout,
    transitions, emissions: the network's settings (see `spacy_crf.nn.BiLSTMCRF`).
    With transitions = "factored" the labels' classes (`set_label_classes`),
    with emissions = "composed" the labels' parts (`set_label_parts`) are
    needed to build, and are saved with the sizes.
    """

    def __init__(self, **settings: Any) -> None:
        super().__init__(None, config={"network": dict(settings)})
        self._constraints: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None
        self.label_classes: Optional[List[int]] = None
        self.label_parts: Optional[List[List[int]]] = None
        self.quantize = "none"
        self._inference_copy: Optional[torch.nn.Module] = None
        self._array_copy: Optional[ArrayNetwork] = None

    def set_quantize(self, mode: str) -> None:
        """ "none", "int8" or "bf16": predict on the CPU with an int8 (bfloat16)
        copy of the network."""
        if mode not in quantization.MODES:
            raise ValueError(f"quantize must be one of {quantization.MODES}, got {mode!r}")
        self.quantize = mode
        self._inference_copy = self._array_copy = None

    def predict(self, inputs: ArgsKwargs) -> Any:
        """The network's output without gradients, from its eval view; with
        quantize = "int8" or "bf16" on the CPU, from that copy (made anew
        after the weights changed). Safe to call from several threads."""
        network = self._inference_copy
        if network is None:
            mode = self.quantize if self.device.type == "cpu" else "none"
            network = self._inference_copy = quantization.inference_copy(self._model, mode)
        with torch.no_grad(), torch.autocast(device_type="cuda", enabled=self._mixed_precision):
            return network(*inputs.args, **inputs.kwargs)

    def set_label_classes(self, classes: Optional[Sequence[int]]) -> None:
        """The class id of each label, for factored transitions (read at `build`)."""
        self.label_classes = None if classes is None else [int(c) for c in classes]

    def set_label_parts(self, parts: Optional[Sequence[Sequence[int]]]) -> None:
        """The part ids of each label, for composed emissions (read at `build`)."""
        self.label_parts = None if parts is None else [[int(p) for p in label] for label in parts]

    @property
    def network(self) -> Optional[BiLSTMCRF]:
        """RETURNS (Optional[BiLSTMCRF]): the torch network, None until built."""
        return self._model

    @property
    def device(self) -> torch.device:
        if self._model is None:
            return get_torch_default_device()
        return self._model.start.device

    def build(self, n_inputs: int, n_labels: int) -> BiLSTMCRF:
        """Create a freshly initialized network for these sizes."""
        network_cfg = {**self.cfg["network"], "n_inputs": n_inputs, "n_labels": n_labels}
        network_cfg.pop("classes", None)
        network_cfg.pop("parts", None)
        if network_cfg.get("transitions") == "factored":
            network_cfg["classes"] = self.label_classes
        if network_cfg.get("emissions") == "composed":
            network_cfg["parts"] = self.label_parts
        settings = dict(network_cfg)
        network = BiLSTMCRF(settings.pop("n_inputs"), settings.pop("n_labels"), **settings)
        self._model = network.to(get_torch_default_device())
        self.cfg = {"network": network_cfg}
        self._apply_constraints()  # also drops the int8 copy of the old network
        return self._model

    def snapshot(self) -> Dict[str, Any]:
        """The shim's state as it is, for `restore`: `grow` builds a new
        network and new settings rather than changing the old ones, so a
        shallow copy of the attributes keeps what it replaces."""
        return dict(vars(self))

    def restore(self, snapshot: Dict[str, Any]) -> None:
        """Put back the state that `snapshot` took (after a failed `grow`)."""
        vars(self).clear()
        vars(self).update(snapshot)

    def grow(
        self,
        donors: Sequence[int],
        *,
        classes: Optional[Sequence[int]] = None,
        class_sources: Optional[Sequence[int]] = None,
        parts: Optional[Sequence[Sequence[int]]] = None,
        part_sources: Optional[Sequence[int]] = None,
    ) -> BiLSTMCRF:
        """Add len(donors) labels to the built network, each starting from
        its donor's scores (spacy_crf.nn.growth); the old labels' scores and
        every decoded path stay as they were. Constraints: set them anew."""
        network_cfg = dict(self.cfg["network"])
        settings = {k: v for k, v in network_cfg.items() if k not in ("n_inputs", "n_labels", "classes", "parts")}
        self._model = grown_network(
            self._model,
            settings,
            donors,
            classes=classes,
            class_sources=class_sources,
            parts=parts,
            part_sources=part_sources,
        )
        network_cfg["n_labels"] = int(self._model.start.shape[0])
        if network_cfg.get("transitions") == "factored":
            self.label_classes = network_cfg["classes"] = [int(c) for c in classes or ()]
        if network_cfg.get("emissions") == "composed":
            self.label_parts = network_cfg["parts"] = [[int(p) for p in label] for label in parts or ()]
        self.cfg = {"network": network_cfg}
        self._apply_constraints()
        return self._model

    def set_constraints(self, masks: Optional[Tuple[Any, Any, Any]]) -> None:
        """Forbid the transitions, first and last labels that the bool masks
        (K, K), (K,), (K,) rule out; None allows everything. Kept across loads."""
        if masks is None:
            self._constraints = None
        else:
            self._constraints = cast(
                Tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                tuple(torch.as_tensor(m, dtype=torch.bool) for m in masks),
            )
        self._apply_constraints()

    def _apply_constraints(self) -> None:
        self._inference_copy = self._array_copy = None
        network = self._model
        if network is None:
            return
        n_labels = network.start.shape[0]
        if self._constraints is None or self._constraints[1].shape[0] != n_labels:
            network.clear_constraints()
        else:
            network.set_constraints(*self._constraints)

    def finish_update(self, optimizer: Any) -> None:
        if self._model is None:
            return
        self._inference_copy = self._array_copy = None
        for name, param in self._model.named_parameters():
            if param.grad is None:
                continue
            if not self._grad_scaler.found_inf:  # skip the update if a gradient overflowed
                current = torch2xp(param.data)  # shares the parameter's memory
                _forget_if_resized(optimizer, (self.id, name), current.size)
                weights, _ = optimizer((self.id, name), current, torch2xp(param.grad))
                if weights is not current:  # Thinc's optimizers update in place
                    param.data.copy_(xp2torch(weights, device=param.device))
            param.grad.zero_()
        self._grad_scaler.update()

    def _flatten(self) -> None:
        if self._model.lstm is not None:
            self._model.lstm.flatten_parameters()

    @contextlib.contextmanager
    def use_params(self, params: Dict[Any, Any]) -> Iterator[None]:
        prefix = f"pytorch_{self.id}_"
        state = {}
        for key, value in params.items():
            if isinstance(key, tuple) and len(key) == 2 and key[0] == self.id:
                name = key[1]
            elif isinstance(key, str) and key.startswith(prefix):
                name = key[len(prefix) :]
            else:
                continue
            state[name] = xp2torch(value, device=self.device)
        current = self._model.state_dict() if self._model is not None else {}
        # averages of a parameter resized by labels added since: not used
        state = {k: v for k, v in state.items() if k in current and v.numel() == current[k].numel()}
        if not state or self._model is None:
            yield
            return
        backup = {k: v.clone() for k, v in self._model.state_dict().items()}
        self._model.load_state_dict(state, strict=False)
        self._flatten()
        self._inference_copy = self._array_copy = None
        try:
            yield
        finally:
            self._model.load_state_dict(backup)
            self._flatten()
            self._inference_copy = self._array_copy = None

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)
            self._apply_constraints()

    def to_bytes(self) -> bytes:
        """The settings and weights in the torch-free format (spacy_crf.engine.weights)."""
        arrays = None if self._model is None else arrays_from_state(self._model.state_dict())
        return weights.dump_network(self.cfg, arrays)

    def array_network(self) -> ArrayNetwork:
        """The network's weights on the torch-free engine, with its
        constraints (made anew after the weights changed)."""
        network = self._array_copy
        if network is None:
            assert self._model is not None  # checked by the caller (E009)
            network = ArrayNetwork(self.cfg["network"], arrays_from_state(self._model.state_dict()))
            constraints = self._constraints
            masks = (
                None
                if constraints is None
                else (constraints[0].cpu().numpy(), constraints[1].cpu().numpy(), constraints[2].cpu().numpy())
            )
            network.set_constraints(masks)
            self._array_copy = network
        return network

    def from_bytes(self, bytes_data: bytes) -> "CRFShim":
        """Rebuild the network from saved sizes and weights (either format:
        the torch-free arrays, or torch.save bytes of earlier releases).

        Raises UnsafeModelError if the weights would need code to load, and
        ValueError naming the setting if they were made with other settings.
        """
        msg = weights.load_message(bytes_data)
        if weights.is_torch_format(msg):  # spacy-crf 1.x and earlier
            state = _load_weights(msg["state"], self.device)
        else:
            arrays = weights.arrays_of(msg) if "arrays" in msg else None
            if arrays is None:  # saved before it was built
                self._model = None
                return self
            state = {name: torch.from_numpy(array).to(self.device) for name, array in arrays.items()}
        saved: Dict[str, Any] = (msg.get("config") or {}).get("network") or _settings_from_weights(state)
        configured = self.cfg["network"]
        for key in STRUCTURAL:
            in_file = saved.get(key, BEFORE_THE_SETTING.get(key))
            if in_file is not None and key in configured and in_file != configured[key]:
                raise ValueError(f"{key} is {in_file!r} in the file, {configured[key]!r} in the config")
        previous = (self._model, self.cfg, self.label_classes, self.label_parts)
        if saved.get("classes") is not None:
            self.label_classes = saved["classes"]
        if saved.get("parts") is not None:
            self.label_parts = saved["parts"]
        self.build(saved["n_inputs"], saved["n_labels"])
        try:
            self._model.load_state_dict(state)
        except Exception:
            self._model, self.cfg, self.label_classes, self.label_parts = previous
            raise
        return self


def _forget_if_resized(optimizer: Any, key: Tuple[int, str], size: int) -> None:
    """Drop the optimizer's state (moments, averages, step count) for a
    parameter that labels added since its last update have resized: it
    starts afresh, as a new optimizer would."""
    moments = getattr(optimizer, "mom1", None)
    if not isinstance(moments, dict) or key not in moments or moments[key].size == size:
        return
    for state in (optimizer.mom1, optimizer.mom2, getattr(optimizer, "averages", None) or {}):
        state.pop(key, None)
    if key in getattr(optimizer, "nr_update", {}):
        optimizer.nr_update[key] = 0


def _load_weights(data: bytes, device: torch.device) -> Dict[str, torch.Tensor]:
    """A state dict from torch.save bytes, refusing anything but tensors."""
    try:
        state = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        raise UnsafeModelError(Errors.E017.format(reason=str(e).splitlines()[0])) from None
    if not isinstance(state, dict):
        raise ValueError("the torch weights are not a state dict")
    return state


def _settings_from_weights(state: Dict[str, torch.Tensor]) -> Dict[str, int]:
    """Sizes and shape settings of a network, read from its weights (files
    saved by spacy-crf 0.1.0 hold no sizes)."""
    n_labels, width = state["emission.weight"].shape
    depth = sum(1 for key in state if key.startswith("lstm.weight_ih_l") and not key.endswith("_reverse"))
    if depth == 0:
        return {"n_inputs": width, "n_labels": n_labels, "depth": 0}
    return {
        "n_inputs": state["lstm.weight_ih_l0"].shape[1],
        "n_labels": n_labels,
        "depth": depth,
        "hidden_width": state["lstm.weight_hh_l0"].shape[1],
    }
