"""Emission layers: each label's score for each token (pure torch, no spaCy).

- "full": a linear layer, one weight vector per label (K * width weights).
- "composed": a label made of parts (a UPOS+FEATS bundle of its UPOS and its
  features, "Case=Nom|Number=Plur|POS=NOUN") scores the sum of its parts'
  scores plus its own bias: a linear layer to the P parts, then a fixed
  (P, K) 0/1 composition. A bundle seen a few times in training shares the
  weights of its parts with every other bundle that has them (Tkachenko and
  Sirts, CoNLL 2018), and the cost per token is width * P + P * K instead of
  width * K (Turkish IMST: 76 parts, 981 bundles). The CRF over the bundles is
  unchanged: emissions are its inputs, whatever computed them.
"""

from typing import Sequence

import torch
from torch import nn


class ComposedEmission(nn.Module):
    """Label scores as the sum of the label's parts' scores plus a bias.

    width (int): width of the hidden states.
    parts (Sequence[Sequence[int]]): for each of the K labels, the ids of its
        parts (0..P-1; a label may have none, then it scores its bias).
    """

    composition: torch.Tensor  # (P, K) 0/1, a buffer

    def __init__(self, width: int, parts: Sequence[Sequence[int]]) -> None:
        super().__init__()
        n_parts = 1 + max((int(p) for label in parts for p in label), default=-1)
        if n_parts < 1 or any(int(p) < 0 for label in parts for p in label):
            raise ValueError("composed emissions need part ids 0..P-1 and at least one part")
        composition = torch.zeros(n_parts, len(parts))
        for label, label_parts in enumerate(parts):
            for part in label_parts:
                composition[int(part), label] = 1.0
        self.parts = nn.Linear(width, n_parts, bias=False)
        self.bias = nn.Parameter(torch.zeros(len(parts)))
        # derived from the labels, rebuilt with the network: not saved
        self.register_buffer("composition", composition, persistent=False)

    @property
    def in_features(self) -> int:
        return self.parts.in_features

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., width) hidden states -> (..., K) label scores."""
        return self.compose(self.parts(hidden))

    def compose(self, part_scores: torch.Tensor) -> torch.Tensor:
        """(..., P) part scores -> (..., K) label scores."""
        # one fused multiply-add (no second pass over the (N, K) scores for the bias)
        flat = torch.addmm(self.bias, part_scores.reshape(-1, part_scores.shape[-1]), self.composition)
        return flat.reshape(*part_scores.shape[:-1], flat.shape[-1])
