"""Int8 inference copies of the network, for the CPU (pure torch, no spaCy).

torch's dynamic quantization (`torch.ao.quantization.quantize_dynamic`)
stores the LSTM's and the linear layers' weights as int8 and quantizes the
activations on the fly; the CRF's scores stay float32. It changes outputs
slightly (docs/performance.md measures the cost), runs on the CPU only, and is
deprecated upstream in favour of torchao: `available()` says whether this
torch still has it.
"""
import copy
import warnings

from torch import nn

MODES = ("none", "int8")


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
        return quantize_dynamic(source, {nn.LSTM, nn.Linear}, dtype=torch.qint8, inplace=True)
