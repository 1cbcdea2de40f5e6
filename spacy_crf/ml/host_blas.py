"""Matrix products of the embedding layers on numpy's BLAS, on the CPU.

Thinc's NumpyOps multiplies matrices with its bundled BLIS. numpy's BLAS
(OpenBLAS in the Linux wheels, Accelerate on macOS) is faster at the
embedding's shapes: the Maxout that mixes the features of ~1,100 distinct
words (640 -> 3 x 128) took 18.5 ms with BLIS and 6.1 ms with OpenBLAS, one
thread each, on an AMD EPYC (docs/design.md; `python -m benchmarks.embedding`). `on_host_blas(model)`
gives every NumpyOps node of `model` a NumpyOps that delegates `gemm` to
numpy (Thinc's `use_blis=False`); everything else is Thinc's code. On GPU
(CupyOps) nothing changes. The component's thread scope (spacy_crf.threads)
holds numpy's BLAS to the component's thread count.

Results equal BLIS's up to float32 rounding (the products are summed in a
different order). `Model.to_cpu()` gives a layer Thinc's default NumpyOps
again: the same results, BLIS's speed.
"""

from typing import cast

from thinc.api import Model, NumpyOps

# One instance for every layer: NumpyOps holds no per-layer state.
HOST_BLAS_OPS = NumpyOps(use_blis=False)


def on_host_blas(model: Model) -> Model:
    """Let the NumpyOps nodes of `model` multiply matrices with numpy's BLAS.

    RETURNS (Model): the same model.
    """
    for node in model.walk():
        # NumpyOps is a Cython class without stubs: type() does not narrow node.ops for mypy
        if type(node.ops) is NumpyOps and cast(NumpyOps, node.ops).use_blis:
            node.ops = HOST_BLAS_OPS
    return model
