"""Which code runs the CRF: the fused Triton kernels, the Numba Viterbi or the torch reference.

`log_partition`, `negative_log_likelihood`, `viterbi_decode` and `marginals`
here are crf.py's functions, same arguments, plus a keyword `kernels` that
picks the code: triton_crf.py's kernels run CUDA tensors with 1 to 128 labels
in float16, bfloat16 or float32; everything else (CPU, float64, more labels)
runs crf.py, the reference the kernels are tested against. Scores whose
transitions are class-factored (a `classes` field) that the kernels do not
take run factored.py's O(K * C) algorithms (any device; `nbest_decode` too),
except on CUDA, where triton_factored.py's kernels run log Z (and the NLL),
marginals and Viterbi at any K. On the CPU, `viterbi_decode` runs
numba_viterbi.py's fused loops (full or factored transitions, float32 or
float64) where Numba is installed.
`spacy_crf.nn` exports these functions, so the pipeline's CRF runs the
kernels on a GPU.

    auto    Triton kernels for CUDA tensors they cover, the Numba Viterbi
            for CPU tensors (where Numba is installed), torch otherwise
    torch   always the torch code, e.g. to rule the kernels out when debugging
            (and Thinc's code for the character CNN, whose CPU loops
            engine/char_cnn_numba.py runs in every other mode)
    triton  the Triton kernels wherever they can run: CUDA tensors, and CPU
            tensors when Triton's interpreter is on (TRITON_INTERPRET=1 before
            the kernels are first imported), which is how the tests run them
            on CPU
    numba   as auto (for naming the Numba Viterbi in tests and benchmarks)

kernels=None (the default) takes the environment variable SPACY_CRF_KERNELS,
read at every call and "auto" when unset: the switch for code that does not
pass `kernels`, e.g. `SPACY_CRF_KERNELS=torch spacy train ...`.

Pure torch, no spaCy; Triton and Numba are imported only when a kernel is
about to run.
"""

import importlib.util
import warnings
from functools import lru_cache
from types import ModuleType
from typing import Optional, Tuple

import torch

from ...engine.modes import kernel_mode
from ...errors import Warnings
from .. import crf, factored
from ..crf import CRFScores
from ..packed import PackedScores

# triton_crf.MAX_LABELS, known here without importing Triton
KERNEL_MAX_LABELS = 128
_KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# The kernels use Triton 3's interpreter and language; torch < 2.4 brings Triton 2.
MIN_TRITON = (3, 0)


def triton_usable() -> bool:
    """Whether a Triton the kernels can run on is installed (3.0 or later)."""
    if importlib.util.find_spec("triton") is None:
        return False
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = tuple(int(part) for part in version("triton").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return release >= MIN_TRITON


@lru_cache(maxsize=1)
def _kernels() -> Optional[ModuleType]:
    """The kernel module, or None where Triton 3 is not installed (torch's
    code runs then)."""
    if not triton_usable():
        return None
    from . import triton_crf

    return triton_crf


@lru_cache(maxsize=1)
def _numba_viterbi() -> Optional[ModuleType]:
    """The Numba Viterbi's module, or None where Numba is not installed or
    cannot set up its kernels (e.g. no writable cache directory: set
    NUMBA_CACHE_DIR), with a warning; torch's code decodes then."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        from . import numba_viterbi
    except (ImportError, RuntimeError, OSError) as error:
        warnings.warn(Warnings.W001.format(error=error), stacklevel=2)
        return None
    return numba_viterbi


def use_numba(emissions: torch.Tensor, *, kernels: Optional[str] = None) -> bool:
    """Whether the Numba Viterbi should decode this batch (its emissions,
    padded or packed): CPU tensors, mode "auto" or "numba", Numba installed."""
    return kernel_mode(kernels) in ("auto", "numba") and emissions.device.type == "cpu" and _numba_viterbi() is not None


def use_kernels(
    emissions: torch.Tensor, *, kernels: Optional[str] = None, max_labels: Optional[int] = KERNEL_MAX_LABELS
) -> bool:
    """Whether the fused kernels should score this batch.

    emissions (Tensor): (B, T, K), the batch's emissions.
    kernels (Optional[str]): the mode; None for SPACY_CRF_KERNELS.
    max_labels (Optional[int]): the most labels the kernel takes; None for any.
    RETURNS (bool): True for the kernels, False for the torch code.
    """
    mode = kernel_mode(kernels)
    if mode == "torch" or emissions.dim() != 3 or emissions.dtype not in _KERNEL_DTYPES:
        return False
    B, T, K = emissions.shape
    if B == 0 or T == 0 or K < 1 or (max_labels is not None and K > max_labels):
        return False
    if emissions.device.type == "cuda":
        return _kernels() is not None
    if emissions.device.type == "cpu" and mode == "triton":
        module = _kernels()
        return module is not None and module.INTERPRETED
    return False


def log_partition(scores: CRFScores, *, kernels: Optional[str] = None) -> torch.Tensor:
    """crf.log_partition, by the kernels where `use_kernels` says so.

    kernels (Optional[str]): "auto", "torch", "triton" or "numba"; None for SPACY_CRF_KERNELS.
    RETURNS (Tensor): (B,) log Z, with its gradient.
    """
    if use_kernels(scores.emissions, kernels=kernels):
        from . import triton_crf

        return triton_crf.log_partition(scores)
    if scores.classes is not None:
        if use_kernels(scores.emissions, kernels=kernels, max_labels=None):
            from . import triton_factored

            return triton_factored.log_partition(scores)
        return factored.log_partition(scores)
    return crf.log_partition(scores)


def negative_log_likelihood(scores: CRFScores, allowed: torch.Tensor, *, kernels: Optional[str] = None) -> torch.Tensor:
    """crf.negative_log_likelihood, by the kernels where `use_kernels` says so.

    allowed (Tensor): (B, T, K) bool, the labels each token may take.
    kernels (Optional[str]): "auto", "torch", "triton" or "numba"; None for SPACY_CRF_KERNELS.
    RETURNS (Tensor): (B,) non-negative NLL, with its gradient.
    """
    if use_kernels(scores.emissions, kernels=kernels):
        from . import triton_crf

        return triton_crf.negative_log_likelihood(scores, allowed)
    if scores.classes is not None:
        if use_kernels(scores.emissions, kernels=kernels, max_labels=None):
            from . import triton_factored

            return crf.negative_log_likelihood(scores, allowed, partition=triton_factored.log_partition)
        return crf.negative_log_likelihood(scores, allowed, partition=factored.log_partition)
    return crf.negative_log_likelihood(scores, allowed)


def viterbi_decode(
    scores: CRFScores, *, compact: Optional[bool] = None, kernels: Optional[str] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.viterbi_decode, by the kernels where `use_kernels` says so.

    compact (Optional[bool]): crf.viterbi_decode's loop layout; the kernels
        do not need it.
    kernels (Optional[str]): "auto", "torch", "triton" or "numba"; None for
        SPACY_CRF_KERNELS.
    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long and their scores (B,).
    """
    if use_kernels(scores.emissions, kernels=kernels):
        from . import triton_crf

        return triton_crf.viterbi_decode(scores)
    if use_numba(scores.emissions, kernels=kernels):
        from . import numba_viterbi

        return numba_viterbi.viterbi_decode(scores)
    if scores.classes is not None:
        if use_kernels(scores.emissions, kernels=kernels, max_labels=None):
            from . import triton_factored

            return triton_factored.viterbi_decode(scores)
        return factored.viterbi_decode(scores, compact=compact)
    return crf.viterbi_decode(scores, compact=compact)


def viterbi_decode_packed(scores: PackedScores, *, kernels: Optional[str] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """`viterbi_decode(scores.padded())`: by the Numba Viterbi straight from
    the packed emissions where `use_numba` says so (no padded tensor), else
    padded first.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, T) long and their scores (B,).
    """
    if use_numba(scores.data, kernels=kernels):
        from . import numba_viterbi

        return numba_viterbi.viterbi_decode_packed(scores)
    return viterbi_decode(scores.padded(), kernels=kernels)


def marginals(scores: CRFScores, *, kernels: Optional[str] = None) -> torch.Tensor:
    """crf.marginals, by the kernels where `use_kernels` says so.

    kernels (Optional[str]): "auto", "torch", "triton" or "numba"; None for SPACY_CRF_KERNELS.
    RETURNS (Tensor): (B, T, K) label probabilities; padded rows are 0.
    """
    if use_kernels(scores.emissions, kernels=kernels):
        from . import triton_crf

        return triton_crf.marginals(scores)
    if scores.classes is not None:
        if use_kernels(scores.emissions, kernels=kernels, max_labels=None):
            from . import triton_factored

            return triton_factored.marginals(scores)
        return factored.marginals(scores)
    return crf.marginals(scores)


def nbest_decode(scores: CRFScores, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """crf.nbest_decode, or factored.py's for class-factored transitions.

    RETURNS (Tuple[Tensor, Tensor]): paths (B, k, T) long and scores (B, k).
    """
    if scores.classes is not None:
        return factored.nbest_decode(scores, k)
    return crf.nbest_decode(scores, k)
