"""The network as prediction runs it (pure torch, no spaCy).

- "none": `eval_view`, the network itself in inference mode (no dropout),
  sharing its weights, so that prediction never switches the module that
  training uses between train() and eval(): any number of threads may
  predict while the network stays as training left it.

Reduced-precision inference copies, for the CPU; both change outputs slightly
(docs/benchmarks.md measures the cost); the CRF's scores and decoding stay
float32.

- "int8": torch's dynamic quantization (`torch.ao.quantization.quantize_dynamic`)
  stores the LSTM's and the linear layers' weights as int8 and quantizes the
  activations on the fly. Deprecated upstream in favour of torchao:
  `available()` says whether this torch still has it.
- "bf16": the LSTM and the emission layer in bfloat16 (weights, inputs,
  state), the emissions back in float32 for the CRF. Fast where the CPU has
  bfloat16 matrix instructions (AVX512-BF16, AMX: recent Xeon and EPYC);
  elsewhere torch converts in software, which can be slower than float32:
  measure first.
"""

import copy
import warnings
from typing import TYPE_CHECKING

from torch import nn

if TYPE_CHECKING:
    from .network import BiLSTMCRF

MODES = ("none", "int8", "bf16")


def available() -> bool:
    """Whether this torch has eager dynamic quantization and a quantized
    engine to run it."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.ao.quantization import quantize_dynamic  # noqa: F401
    except ImportError:
        return False
    return any(engine != "none" for engine in torch.backends.quantized.supported_engines)


def int8_copy(network: nn.Module) -> nn.Module:
    """A copy of the network for inference on the CPU, its LSTM and linear
    layers dynamically quantized to int8; the network itself is unchanged.

    Raises ImportError where this torch has no dynamic quantization.
    """
    import torch

    with warnings.catch_warnings():
        # torch.ao.quantization announces its deprecation on every call
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        source = copy.deepcopy(network).cpu().eval()
        quantized: nn.Module = quantize_dynamic(source, {nn.LSTM, nn.Linear}, dtype=torch.qint8, inplace=True)
        return quantized


def bf16_copy(network: "BiLSTMCRF") -> "BiLSTMCRF":
    """A copy of the network for inference on the CPU whose LSTM and emission
    layer run in bfloat16; the network itself is unchanged."""
    import torch

    source = copy.deepcopy(network).cpu().eval()
    if source.lstm is not None:
        source.lstm.to(torch.bfloat16)
    source.emission.to(torch.bfloat16)
    source.compute_dtype = torch.bfloat16
    return source


def eval_view(network: nn.Module) -> nn.Module:
    """The network in inference mode without changing it: a view of each
    module with training = False that shares the module's parameters and
    buffers (updates, loaded weights and constraints show through)."""
    view = copy.copy(network)  # a new __dict__ over the same parameter and buffer dicts
    view.__dict__["_modules"] = {
        name: None if child is None else eval_view(child) for name, child in network._modules.items()
    }
    view.__dict__["training"] = False
    return view


def inference_copy(network: "BiLSTMCRF", mode: str) -> nn.Module:
    """The network that predicts in this mode: the eval view for "none"; an
    int8 or bfloat16 copy (for the CPU) for "int8" and "bf16"."""
    if mode == "none":
        return eval_view(network)
    if mode == "int8":
        return int8_copy(network)
    if mode == "bf16":
        return bf16_copy(network)
    raise ValueError(f"no inference copy for quantize = {mode!r}; one of {MODES[1:]}")
