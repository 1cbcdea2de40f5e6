"""The SPACY_CRF_KERNELS switch: which code runs the CRF and the character
CNN (see spacy_crf/nn/kernels/dispatch.py for the modes). No torch."""

import os
from typing import Optional

MODES = ("auto", "torch", "triton", "numba")


def kernel_mode(kernels: Optional[str] = None) -> str:
    """The mode in force, checked.

    kernels (Optional[str]): "auto", "torch" or "triton"; None for the value
        of SPACY_CRF_KERNELS ("auto" when unset).
    RETURNS (str): "auto", "torch" or "triton".
    """
    if kernels is None:
        mode = os.environ.get("SPACY_CRF_KERNELS", "auto").strip().lower() or "auto"
        if mode not in MODES:
            raise ValueError(f"SPACY_CRF_KERNELS must be one of {', '.join(MODES)}, got {mode!r}")
        return mode
    if kernels not in MODES:
        raise ValueError(f"kernels must be one of {', '.join(MODES)}, got {kernels!r}")
    return kernels


ENGINES = ("auto", "numpy", "torch")


def engine_mode() -> str:
    """The inference engine in force where torch is installed:
    SPACY_CRF_ENGINE, read at every call, "auto" when unset: "numpy" is the
    torch-free engine (spacy_crf.engine), "torch" the torch network; "auto"
    is torch, measured the faster on the CPU (`nlp.pipe` words/s; one doc at
    a time they are even) and the one that runs a GPU, int8 and bf16.
    Without torch, prediction always runs the torch-free engine. Training
    always runs torch.

    RETURNS (str): "auto", "numpy" or "torch".
    """
    mode = os.environ.get("SPACY_CRF_ENGINE", "auto").strip().lower() or "auto"
    if mode not in ENGINES:
        raise ValueError(f"SPACY_CRF_ENGINE must be one of {', '.join(ENGINES)}, got {mode!r}")
    return mode
