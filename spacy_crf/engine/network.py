"""The BiLSTM-CRF's prediction from its weights as numpy arrays: what
`spacy_crf.nn.BiLSTMCRF` computes in eval mode, without torch.

The weights are the torch network's state dict, name for name
(`lstm.weight_ih_l0`, `emission.weight`, `transitions` or the factored
`class_transitions`, `leave`, `enter`, `start`, `end`, ...), so either engine
reads what the other saved.
"""

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy

from . import NEG_INF
from .lstm import Direction, bilstm, halved_gates

# the network's kinds of transitions and emissions (spacy_crf.nn.network's, known without torch)
TRANSITIONS = ("full", "factored")
EMISSIONS = ("full", "composed")


class ArrayScores(NamedTuple):
    """The CRF scores of a padded batch, as numpy arrays (spacy_crf.nn.CRFScores's fields)."""

    emissions: numpy.ndarray  # shape: (B, T, K), float32, 0 at padded steps
    mask: numpy.ndarray  # shape: (B, T), bool
    transitions: numpy.ndarray  # shape: (K, K), forbidden entries NEG_INF
    start: numpy.ndarray  # shape: (K,)
    end: numpy.ndarray  # shape: (K,)
    classes: Optional[numpy.ndarray] = None  # (K,) int64 where the transitions are factored


class ArrayNetwork:
    """The network's prediction on numpy.

    settings (Mapping[str, Any]): the network's settings as the shim saves
        them (n_inputs, n_labels, depth, transitions, emissions, classes,
        parts, ...).
    arrays (Mapping[str, numpy.ndarray]): the weights by their torch names.
    Raises ValueError naming the weight that is missing or of the wrong shape.
    """

    def __init__(self, settings: Mapping[str, Any], arrays: Mapping[str, numpy.ndarray]) -> None:
        self.settings = dict(settings)
        self.arrays = {name: numpy.asarray(a, dtype=numpy.float32) for name, a in arrays.items()}
        n_inputs, n_labels = int(settings["n_inputs"]), int(settings["n_labels"])
        depth = int(settings.get("depth", 1))
        self.n_inputs, self.n_labels = n_inputs, n_labels
        self.layers: List[Tuple[Direction, Direction]] = []
        width = n_inputs
        for layer in range(depth):
            pair = []
            for suffix in ("", "_reverse"):
                weight_ih = self._weight(f"lstm.weight_ih_l{layer}{suffix}", (None, width))
                H = weight_ih.shape[0] // 4
                weight_hh = self._weight(f"lstm.weight_hh_l{layer}{suffix}", (4 * H, H))
                bias = self._weight(f"lstm.bias_ih_l{layer}{suffix}", (4 * H,))
                bias = bias + self._weight(f"lstm.bias_hh_l{layer}{suffix}", (4 * H,))
                pair.append(halved_gates(weight_ih, weight_hh, bias))
            self.layers.append((pair[0], pair[1]))
            width = 2 * pair[0][1].shape[1]
        self.composition: Optional[numpy.ndarray] = None
        if settings.get("emissions", "full") == "composed":
            parts: Sequence[Sequence[int]] = settings["parts"]
            n_parts = 1 + max((int(p) for label in parts for p in label), default=-1)
            self.emission_weight = self._weight("emission.parts.weight", (n_parts, width))
            self.composition = numpy.zeros((n_parts, n_labels), dtype=numpy.float32)
            for label, label_parts in enumerate(parts):
                self.composition[[int(p) for p in label_parts], label] = 1.0
        else:
            self.emission_weight = self._weight("emission.weight", (n_labels, width))
        self.emission_bias = self._weight("emission.bias", (n_labels,))
        self.classes: Optional[numpy.ndarray] = None
        if settings.get("transitions", "full") == "factored":
            self.classes = numpy.asarray(settings["classes"], dtype=numpy.int64)
            n_classes = int(self.classes.max()) + 1
            class_pair = self._weight("class_transitions", (n_classes, n_classes))
            leave, enter = self._weight("leave", (n_labels,)), self._weight("enter", (n_labels,))
            # as spacy_crf.nn.factored.factored_transitions sums them
            self.transitions = class_pair[self.classes][:, self.classes] + leave[:, None] + enter[None, :]
        else:
            self.transitions = self._weight("transitions", (n_labels, n_labels))
        self.start = self._weight("start", (n_labels,))
        self.end = self._weight("end", (n_labels,))
        self.allowed: Optional[Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]] = None

    def _weight(self, name: str, shape: Tuple[Optional[int], ...]) -> numpy.ndarray:
        array = self.arrays.get(name)
        if array is None:
            raise ValueError(f"the weights have no {name!r}")
        if array.ndim != len(shape) or any(want is not None and got != want for got, want in zip(array.shape, shape)):
            raise ValueError(f"the weight {name!r} has the shape {array.shape}, expected {shape}")
        return array

    def set_constraints(self, masks: Optional[Tuple[Any, Any, Any]]) -> None:
        """Forbid the transitions, first and last labels that the bool masks
        (K, K), (K,), (K,) rule out; None allows everything."""
        if masks is None or numpy.asarray(masks[1]).shape[0] != self.n_labels:
            self.allowed = None
        else:
            transitions, start, end = (numpy.asarray(m, dtype=bool) for m in masks)
            self.allowed = (transitions, start, end)

    def first_non_finite(self) -> Optional[str]:
        """The name of the first weight holding NaN or inf, or None."""
        for name, array in self.arrays.items():
            if not numpy.isfinite(array).all():
                return name
        return None

    def scores(self, rows: Sequence[numpy.ndarray]) -> ArrayScores:
        """Score a batch of rows.

        rows (Sequence[numpy.ndarray]): per row, its (n, n_inputs) token vectors.
        RETURNS (ArrayScores): the emissions (B, T, K), T the longest row's
            length (at least 1), and the CRF parameters with the constraints.
        """
        lengths = numpy.asarray([len(row) for row in rows], dtype=numpy.int64)
        B, T = len(rows), max(int(lengths.max()) if len(rows) else 0, 1)
        mask = numpy.arange(T)[None, :] < lengths[:, None]
        nonempty = [row for row in rows if len(row)]
        tokens = (
            numpy.concatenate(nonempty).astype(numpy.float32, copy=False)
            if nonempty
            else numpy.zeros((0, self.n_inputs), dtype=numpy.float32)
        )
        if tokens.shape[1] != self.n_inputs:
            raise ValueError(f"token vectors of width {tokens.shape[1]}, the network reads {self.n_inputs}")
        hidden = bilstm(tokens, lengths, self.layers) if self.layers else tokens
        if self.composition is None:
            token_emissions = hidden @ self.emission_weight.T
            token_emissions += self.emission_bias
        else:
            token_emissions = (hidden @ self.emission_weight.T) @ self.composition
            token_emissions += self.emission_bias
        emissions = numpy.zeros((B, T, self.n_labels), dtype=numpy.float32)
        emissions[mask] = token_emissions
        transitions, start, end, classes = self.transitions, self.start, self.end, self.classes
        if self.allowed is not None:
            allowed_transitions, allowed_start, allowed_end = self.allowed
            transitions = numpy.where(allowed_transitions, transitions, numpy.float32(NEG_INF))
            start = numpy.where(allowed_start, start, numpy.float32(NEG_INF))
            end = numpy.where(allowed_end, end, numpy.float32(NEG_INF))
            classes = None  # the constraints break the factored form
        return ArrayScores(emissions, mask, transitions, start, end, classes)


def arrays_from_state(state: Mapping[str, Any]) -> Dict[str, numpy.ndarray]:
    """A state dict's floating tensors (anything with .numpy()) as numpy arrays."""
    return {name: numpy.asarray(tensor.detach().cpu().float().numpy()) for name, tensor in state.items()}
