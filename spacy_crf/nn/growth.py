"""Labels added to a trained network (pure torch, no spaCy).

A new label starts as a copy of an old one, its donor: the same emission
weights with a bias `margin` lower, and the donor's transition, start and end
scores (class-factored transitions: the donor's leave and enter scores, and a
new class the donor's class row and column). Take any path through a new
label and put each new label's donor in its place: no transition, start or
end score falls, and each emission rises by `margin` (full emissions). So
Viterbi never picks a new label before it is trained: every decoded path,
and every score of the old labels, is what it was. With composed emissions a
new label scores its own parts (a new part starts at zero), so this holds
only as far as those parts' scores do.
"""

from typing import Any, Dict, Optional, Sequence

import torch

from .network import BiLSTMCRF

# how far below its donor a new label's emission starts
MARGIN = 4.0


def grown_network(
    network: BiLSTMCRF,
    settings: Dict[str, Any],
    donors: Sequence[int],
    *,
    classes: Optional[Sequence[int]] = None,
    class_sources: Optional[Sequence[int]] = None,
    parts: Optional[Sequence[Sequence[int]]] = None,
    part_sources: Optional[Sequence[int]] = None,
    margin: float = MARGIN,
) -> BiLSTMCRF:
    """A copy of the network with len(donors) labels added after its K.

    network (BiLSTMCRF): the trained network (left unchanged).
    settings (dict): its keyword settings (hidden_width, depth, ...), as built.
    donors (Sequence[int]): for each new label, the old label it starts from.
    classes (Optional[Sequence[int]]): factored transitions: each label's
        class id (old and new labels, in the new numbering).
    class_sources (Optional[Sequence[int]]): for each new class id, the old
        class id whose pair scores it starts from.
    parts (Optional[Sequence[Sequence[int]]]): composed emissions: each
        label's part ids (new numbering).
    part_sources (Optional[Sequence[int]]): for each new part id, the old
        part id it is, or -1 for a new part (its weights start at zero).
    margin (float): how far below its donor's a new label's bias starts.
    RETURNS (BiLSTMCRF): the grown network, on the old one's device.
    """
    n_old = network.start.shape[0]
    if any(not 0 <= d < n_old for d in donors):
        raise ValueError(f"donor ids must be labels of the network, 0..{n_old - 1}: {list(donors)}")
    device = network.start.device
    index = torch.tensor(list(range(n_old)) + [int(d) for d in donors], dtype=torch.long, device=device)
    new_settings = {**settings, "classes": classes, "parts": parts}
    grown = BiLSTMCRF(network.n_inputs, len(index), **new_settings).to(device)
    old = network.state_dict()
    state = {}
    for name, tensor in grown.state_dict().items():
        before = old[name]
        if name in ("start", "end", "leave", "enter"):
            state[name] = before.index_select(0, index)
        elif name == "transitions":
            state[name] = before.index_select(0, index).index_select(1, index)
        elif name == "class_transitions":
            sources = torch.tensor(list(class_sources or ()), dtype=torch.long, device=device)
            state[name] = before.index_select(0, sources).index_select(1, sources)
        elif name == "emission.weight":  # full emissions: one row per label
            state[name] = before.index_select(0, index)
        elif name == "emission.bias":
            state[name] = _lowered(before.index_select(0, index), n_old, margin)
        elif name == "emission.parts.weight":
            state[name] = _part_rows(before, part_sources or (), tensor.shape)
        else:
            if before.shape != tensor.shape:
                raise ValueError(f"{name} changes shape when labels are added: {tuple(before.shape)}")
            state[name] = before
    grown.load_state_dict(state)
    grown.compute_dtype = network.compute_dtype
    grown.lstm_runs = network.lstm_runs
    grown.train(network.training)
    return grown


def _lowered(bias: torch.Tensor, n_old: int, margin: float) -> torch.Tensor:
    """The bias with each new label's (after the first n_old) lowered by margin."""
    bias = bias.clone()
    bias[n_old:] -= margin
    return bias


def _part_rows(weight: torch.Tensor, sources: Sequence[int], shape: torch.Size) -> torch.Tensor:
    """The parts' weight rows in the new numbering; a new part's are zero."""
    rows = weight.new_zeros(shape)
    for new, old in enumerate(sources):
        if old >= 0:
            rows[new] = weight[old]
    return rows
