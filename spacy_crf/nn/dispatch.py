"""Which code runs the CRF: the fused Triton kernels or the torch reference.

crf.py's `log_partition`, `negative_log_likelihood`, `viterbi_decode` and
`marginals` ask `use_kernels` first. The kernels (triton_crf.py) run CUDA
tensors with 1 to 128 labels in float16, bfloat16 or float32; everything else
(CPU, float64, more labels, n-best) runs the torch code in crf.py, which stays
the reference the kernels are tested against.

One switch, the environment variable SPACY_CRF_KERNELS, read at every call:

    auto    (default) kernels for CUDA tensors they cover, torch otherwise
    torch   always the torch code, e.g. to rule the kernels out when debugging
    triton  the kernels wherever they can run: CUDA tensors, and CPU tensors
            when Triton's interpreter is on (TRITON_INTERPRET=1 before the
            kernels are first imported), which is how the tests run them on CPU

Pure torch, no spaCy; Triton is imported only when a kernel is about to run.
"""
import importlib.util
import os
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Optional, Tuple

import torch

if TYPE_CHECKING:
    from .crf import CRFScores

MODES = ("auto", "torch", "triton")
# triton_crf.MAX_LABELS, known here without importing Triton
KERNEL_MAX_LABELS = 128
_KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def kernel_mode() -> str:
    """The value of SPACY_CRF_KERNELS, checked: "auto", "torch" or "triton"."""
    mode = os.environ.get("SPACY_CRF_KERNELS", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"SPACY_CRF_KERNELS must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


@lru_cache(maxsize=1)
def _kernels() -> Optional[ModuleType]:
    """The kernel module, or None where Triton is not installed."""
    if importlib.util.find_spec("triton") is None:
        return None
    from . import triton_crf

    return triton_crf


def use_kernels(emissions: torch.Tensor) -> bool:
    """Whether the fused kernels should score this batch.

    emissions (Tensor): (B, T, K), the batch's emissions.
    RETURNS (bool): True for the kernels, False for the torch code.
    """
    mode = kernel_mode()
    if mode == "torch" or emissions.dim() != 3 or emissions.dtype not in _KERNEL_DTYPES:
        return False
    B, T, K = emissions.shape
    if B == 0 or T == 0 or not 1 <= K <= KERNEL_MAX_LABELS:
        return False
    if emissions.device.type == "cuda":
        return _kernels() is not None
    if emissions.device.type == "cpu" and mode == "triton":
        kernels = _kernels()
        return kernels is not None and kernels.INTERPRETED
    return False


def _lengths(mask: torch.Tensor) -> torch.Tensor:
    return mask.sum(1, dtype=torch.int32)  # shape: (B,); masks are left-aligned


class _KernelLogPartition(torch.autograd.Function):
    """log Z by the forward kernel; its gradient by the backward kernel."""

    @staticmethod
    def forward(ctx, emissions, mask, transitions, start, end, allowed):  # type: ignore[override]
        kernels = _kernels()
        lengths = _lengths(mask)
        log_z, alphas = kernels.forward(emissions, lengths, transitions, start, end, allowed=allowed)
        ctx.save_for_backward(emissions, lengths, transitions, end, alphas, log_z, allowed)
        ctx.start_dtype = start.dtype
        return log_z

    @staticmethod
    def backward(ctx, grad_log_z):  # type: ignore[override]
        emissions, lengths, transitions, end, alphas, log_z, allowed = ctx.saved_tensors
        need_emissions, _, need_transitions, need_start, need_end, _ = ctx.needs_input_grad
        grad_emissions, grad_transitions, grad_start, grad_end = _kernels().backward(
            emissions, lengths, transitions, end, alphas, log_z, grad_log_z,
            allowed=allowed, need_transitions=need_transitions,
        )
        return (
            grad_emissions if need_emissions else None,
            None,
            grad_transitions.to(transitions.dtype) if need_transitions else None,
            grad_start.to(ctx.start_dtype) if need_start else None,
            grad_end.to(end.dtype) if need_end else None,
            None,
        )


def log_partition(scores: "CRFScores", *, allowed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """crf.log_partition by the kernels, autograd included.

    allowed (Optional[Tensor]): (B, T, K) bool; labels not allowed count as
        log 0 (the partial-label sum of the NLL).
    RETURNS (Tensor): (B,) float32, 0 for an empty sequence.
    """
    emissions, mask, transitions, start, end = scores
    return _KernelLogPartition.apply(emissions, mask, transitions, start, end, allowed)


def negative_log_likelihood(scores: "CRFScores", allowed: torch.Tensor) -> torch.Tensor:
    """crf.negative_log_likelihood by the kernels: log Z minus the log-sum
    over the allowed paths, two forward launches and no host sync.

    RETURNS (Tensor): (B,) float32, non-negative.
    """
    log_z = log_partition(scores)
    gold = log_partition(scores, allowed=allowed)
    return (log_z - gold).clamp_min(0.0)


def viterbi_decode(scores: "CRFScores") -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode by one kernel launch.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long and scores (B,) float32.
    """
    emissions, mask, transitions, start, end = scores
    return _kernels().viterbi(emissions, _lengths(mask), transitions, start, end)


def marginals(scores: "CRFScores") -> torch.Tensor:
    """crf.marginals by the forward and backward kernels (no transition counts).

    RETURNS (Tensor): (B, T, K) float32; padded rows are 0.
    """
    emissions, mask, transitions, start, end = (x.detach() for x in scores)
    kernels = _kernels()
    lengths = _lengths(mask)
    log_z, alphas = kernels.forward(emissions, lengths, transitions, start, end)
    ones = torch.ones_like(log_z)
    probs, _, _, _ = kernels.backward(
        emissions, lengths, transitions, end, alphas, log_z, ones,
        need_transitions=False, grad_dtype=torch.float32,
    )
    return probs
