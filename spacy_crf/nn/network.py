"""The torch network behind the spacy-crf components: BiLSTM -> emissions (linear, or
composed from the labels' parts: emissions.py) -> CRF scores.

Pure torch, no spaCy. The module returns the CRF's inputs (emissions plus the
transition, start and end parameters); the loss and decoding live in crf.py.
"""

from typing import Dict, Optional, Sequence, Tuple, Union, cast

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from ..engine.network import EMISSIONS, TRANSITIONS
from .constraints import forbid
from .crf import CRFScores
from .emissions import ComposedEmission
from .factored import factored_transitions
from .kernels import bucketed_lstm
from .packed import PackedScores, packing_rows, pad_tokens, token_index, token_starts


class BiLSTMCRF(nn.Module):
    """A bidirectional LSTM encoder with a linear-chain CRF output layer.

    n_inputs (int): width of the token vectors fed in.
    n_labels (int): number of labels, K.
    hidden_width (int): LSTM hidden size per direction.
    depth (int): number of LSTM layers; 0 puts the CRF straight on the inputs.
    dropout (float): dropout on the LSTM outputs (and between LSTM layers).
    learn_transitions (bool): False fixes transition, start and end scores at
        zero, which turns the CRF into a per-token softmax (the ablation).
    input_dropout (float): dropout on the token vectors fed in.
    transitions (str): "full", a (K, K) matrix of transition scores; or
        "factored": pair[class(i), class(j)] + leave[i] + enter[j], C * C + 2K
        scores over the labels' classes, decoded and trained in O(K * C) a
        token (see factored.py).
    classes (Optional[Sequence[int]]): with "factored", the class id (0..C-1)
        of each label.
    emissions (str): "full", a linear layer to the K labels; or "composed",
        each label's score the sum of its parts' scores plus a bias (see
        emissions.py).
    parts (Optional[Sequence[Sequence[int]]]): with "composed", the part ids
        of each label.
    """

    # registered in __init__ as parameters or buffers (declared here for the type checker)
    transitions: torch.Tensor
    class_transitions: torch.Tensor
    leave: torch.Tensor
    enter: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor
    label_classes: Optional[torch.Tensor]
    allowed_transitions: Optional[torch.Tensor]
    allowed_start: Optional[torch.Tensor]
    allowed_end: Optional[torch.Tensor]
    lstm: Optional[nn.LSTM]

    def __init__(
        self,
        n_inputs: int,
        n_labels: int,
        *,
        hidden_width: int = 128,
        depth: int = 1,
        dropout: float = 0.0,
        learn_transitions: bool = True,
        input_dropout: float = 0.0,
        transitions: str = "full",
        classes: Optional[Sequence[int]] = None,
        emissions: str = "full",
        parts: Optional[Sequence[Sequence[int]]] = None,
    ) -> None:
        super().__init__()
        if transitions not in TRANSITIONS:
            raise ValueError(f"transitions must be one of {TRANSITIONS}, got {transitions!r}")
        if emissions not in EMISSIONS:
            raise ValueError(f"emissions must be one of {EMISSIONS}, got {emissions!r}")
        self.factored = transitions == "factored"
        self.n_inputs = n_inputs
        self.lstm = None
        width = n_inputs
        if depth > 0:
            self.lstm = nn.LSTM(
                n_inputs,
                hidden_width,
                num_layers=depth,
                bidirectional=True,
                batch_first=True,
                dropout=dropout if depth > 1 else 0.0,
            )
            width = 2 * hidden_width
        # the dtype of the LSTM's and emission layer's weights where it is not
        # float32 (a bfloat16 inference copy, see quantize.py): their inputs
        # are cast to it and the emissions back to float32
        self.compute_dtype: Optional[torch.dtype] = None
        # how the BiLSTM runs: "auto" = over length buckets with oneDNN on the
        # CPU (bucketed_lstm.py), packed elsewhere; "packed" = always packed
        self.lstm_runs = "auto"
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = nn.Dropout(input_dropout)
        if emissions == "composed":
            if parts is None or len(parts) != n_labels:
                raise ValueError(f"composed emissions need the part ids of each of the {n_labels} labels")
            self.emission: nn.Module = ComposedEmission(width, parts)
        else:
            self.emission = nn.Linear(width, n_labels)
        shapes: Dict[str, Tuple[int, ...]] = {"transitions": (n_labels, n_labels)}
        self.register_buffer("label_classes", None, persistent=False)
        if self.factored:
            n_classes = len(set(classes or ()))
            if classes is None or len(classes) != n_labels or set(classes) != set(range(n_classes)):
                raise ValueError(
                    f"factored transitions need a class id for each of the {n_labels} labels, "
                    "using every id from 0 to the number of classes - 1"
                )
            self.label_classes = torch.tensor(list(classes), dtype=torch.long)
            shapes = {"class_transitions": (n_classes, n_classes), "leave": (n_labels,), "enter": (n_labels,)}
        for name, shape in [*shapes.items(), ("start", (n_labels,)), ("end", (n_labels,))]:
            if learn_transitions:
                self.register_parameter(name, nn.Parameter(torch.zeros(shape)))
            else:
                self.register_buffer(name, torch.zeros(shape))
        # tag-scheme constraints (see set_constraints); not saved with the weights
        self.register_buffer("allowed_transitions", None, persistent=False)
        self.register_buffer("allowed_start", None, persistent=False)
        self.register_buffer("allowed_end", None, persistent=False)

    def set_constraints(self, transitions: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> None:
        """Forbid transitions, first and last labels: their scores become log(0).

        transitions (Tensor): (K, K) bool, [i, j] if label j may follow label i.
        start (Tensor): (K,) bool. end (Tensor): (K,) bool.
        """
        device = self.start.device
        self.allowed_transitions = transitions.to(device=device, dtype=torch.bool)
        self.allowed_start = start.to(device=device, dtype=torch.bool)
        self.allowed_end = end.to(device=device, dtype=torch.bool)

    def clear_constraints(self) -> None:
        """Allow every transition again."""
        self.allowed_transitions = self.allowed_start = self.allowed_end = None

    def transition_scores(self) -> torch.Tensor:
        """RETURNS (Tensor): the (K, K) transition scores (built from the
        factors for "factored"), differentiable."""
        if not self.factored:
            return self.transitions
        assert self.label_classes is not None  # set in __init__ for factored transitions
        return factored_transitions(self.class_transitions, self.leave, self.enter, self.label_classes)

    def forward(
        self, inputs: torch.Tensor, lengths: torch.Tensor, packed: bool = False
    ) -> Union[CRFScores, PackedScores]:
        """Score a batch of rows.

        inputs (Tensor): (B, T, n_inputs) token vectors, zero-padded, T >= 1;
            or (n_tokens, n_inputs): the rows' tokens one row after another,
            without padding (T is then the longest row's length, at least 1).
        lengths (Tensor): (B,) long on the CPU, the true length of each row.
        packed (bool): leave the emissions packed (PackedScores, see
            packed.py) where the BiLSTM packs them (depth >= 1, B >= 1), for
            prediction; CRFScores otherwise.
        RETURNS (Union[CRFScores, PackedScores]): emissions (B, T, K) (or
            packed) and the mask built on the inputs' device, with the CRF
            parameters.
        """
        B = lengths.shape[0]
        unpadded = inputs.dim() == 2
        if unpadded and int(lengths.sum()) != inputs.shape[0]:
            raise ValueError(f"{inputs.shape[0]} tokens for rows of {int(lengths.sum())} in all")
        T = max(int(lengths.max()) if B else 0, 1) if unpadded else inputs.shape[1]
        mask = torch.arange(T, device=inputs.device) < lengths.to(inputs.device)[:, None]
        transitions, start, end, classes = self.transition_scores(), self.start, self.end, self.label_classes
        if self.allowed_transitions is not None:
            assert self.allowed_start is not None and self.allowed_end is not None  # set together
            transitions, start, end = forbid(
                transitions, start, end, self.allowed_transitions, self.allowed_start, self.allowed_end
            )
            classes = None  # the constraints break the factored form
        hidden = self.input_dropout(inputs)
        starts: Optional[torch.Tensor] = None
        if unpadded:
            hidden, starts = token_starts(hidden, lengths)
        if self.lstm is None:
            if starts is not None:  # unpadded
                hidden = pad_tokens(hidden, starts, lengths, T)
            emissions = self._emit(hidden)  # shape: (B, T, K)
        elif B == 0:
            emissions = self._emit(inputs.new_zeros(0, T, cast(int, self.emission.in_features)))
        else:
            # Packing keeps padding out of the backward direction; empty rows
            # run one zero step whose output the mask discards. The emissions
            # come from the packed tokens, then only they are padded.
            rows = packing_rows(lengths.clamp(min=1), T)
            if self.compute_dtype is not None:
                hidden = hidden.to(self.compute_dtype)
            head = None
            if self.lstm_runs == "auto" and bucketed_lstm.runs_on(self.lstm, hidden):
                # on the CPU: oneDNN's LSTM over length buckets, same outputs (to
                # float rounding); in prediction it returns the emission layer's
                # linear part of them instead
                head = self._bucket_head()
                output = bucketed_lstm.bucketed_bilstm(
                    self.lstm, hidden, lengths.clamp(min=1), rows, starts, T, head=head
                )
            else:
                # one copy of the token index to the device, for gathering here and scattering in padded()
                rows = rows._replace(flat=rows.flat.to(inputs.device))
                if starts is not None:  # unpadded
                    data = hidden.index_select(0, token_index(rows, starts, T))
                else:
                    data = hidden.reshape(B * T, -1).index_select(0, rows.flat)
                packed_inputs = PackedSequence(data, rows.batch_sizes, rows.sorted_indices.to(inputs.device), None)
                output = self.lstm(packed_inputs)[0].data
            if head is None:
                emissions = self._emit(output)
            elif head is self.emission:  # the head's scores: the emissions
                emissions = output
            else:  # or the parts they are composed of
                assert isinstance(self.emission, ComposedEmission)
                emissions = self.emission.compose(output)
            scores = PackedScores(emissions, rows, mask, transitions, start, end, classes)
            return scores if packed else scores.padded()
        return CRFScores(emissions, mask, transitions, start, end, classes)

    def _bucket_head(self) -> Optional[nn.Linear]:
        """In prediction (no dropout, no bfloat16 copy), the emission layer's
        linear part, for the bucketed LSTM to apply bucket by bucket; None
        otherwise (also for a quantized layer, whose LSTM does not run
        bucketed anyway)."""
        if self.training or self.compute_dtype is not None:
            return None
        layer = self.emission.parts if isinstance(self.emission, ComposedEmission) else self.emission
        return layer if type(layer) is nn.Linear else None

    def _emit(self, hidden: torch.Tensor) -> torch.Tensor:
        """The emission scores of the hidden states, float32."""
        if self.compute_dtype is None:
            emissions: torch.Tensor = self.emission(self.dropout(hidden))
            return emissions
        emissions = self.emission(self.dropout(hidden.to(self.compute_dtype)))
        return emissions.float()
