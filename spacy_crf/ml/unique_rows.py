"""Run a row-wise layer once per distinct row of a Ragged batch.

A word's embedding features are the same wherever it occurs, so the rows fed
to the embedding's Maxout repeat: the EWT dev set has about one distinct row
for every five tokens. `unique_rows(layer)` is `with_array(layer)` for Ragged
input that computes `layer` on the distinct rows only and copies the results
back, forward and backward. The output is the same as with_array's; the
parameter gradients are too, since equal rows come from the same parameters.
Rows are grouped on the CPU only (on GPU the matrix product is cheap).
"""

from typing import Callable, Dict, Optional, Tuple, cast

import numpy
from thinc.api import Model
from thinc.layers.with_array import init as with_array_init
from thinc.types import Floats2d, Ints1d, Ragged

# Below this share of distinct rows, grouping pays for itself.
MAX_DISTINCT_SHARE = 0.8


def unique_rows(layer: Model[Floats2d, Floats2d]) -> Model[Ragged, Ragged]:
    """Wrap a layer that maps each row of a 2d array independently.

    The node has the same name, dims and children as `with_array(layer)`, so
    models saved with with_array load into it.
    """
    return Model(
        f"with_array({layer.name})",
        _forward,
        init=with_array_init,
        layers=[layer],
        attrs={"pad": 0},
        dims={name: layer.maybe_get_dim(name) for name in layer.dim_names},
    )


def _forward(model: Model, Xr: Ragged, is_train: bool) -> Tuple[Ragged, Callable]:
    layer = model.layers[0]
    X = cast(Floats2d, Xr.dataXd)  # with_array's input: rows of features
    groups = distinct_rows(X)
    if groups is None:
        Y, get_dX = layer(X, is_train)
        return Ragged(Y, Xr.lengths), lambda dYr: Ragged(get_dX(dYr.dataXd), dYr.lengths)
    first, inverse = groups
    Y_distinct, get_dX_distinct = layer(X[first], is_train)

    def backprop(dYr: Ragged) -> Ragged:
        # grouped rows are numpy arrays (distinct_rows)
        dY_distinct = model.ops.alloc2f(len(first), cast(Floats2d, dYr.dataXd).shape[1])
        numpy.add.at(cast(numpy.ndarray, dY_distinct), cast(numpy.ndarray, inverse), cast(numpy.ndarray, dYr.dataXd))
        dX = model.ops.alloc2f(*X.shape)
        # Each group's summed gradient goes to one of its rows: the rows are
        # equal, so the parameters that made them get the same total.
        dX[first] = get_dX_distinct(dY_distinct)
        return Ragged(dX, dYr.lengths)

    return Ragged(Y_distinct[inverse], Xr.lengths), backprop


_PROJECTIONS: Dict[int, numpy.ndarray] = {}


def distinct_rows(X: Floats2d) -> Optional[Tuple[Ints1d, Ints1d]]:
    """Group the equal rows of a float32 numpy array.

    RETURNS: (first, inverse) with X[first][inverse] == X exactly, or None
        when grouping would not pay (GPU arrays, mostly distinct rows).
    """
    if not isinstance(X, numpy.ndarray) or X.dtype != numpy.float32 or X.ndim != 2:
        return None
    n_rows, width = X.shape
    if n_rows < 2:
        return None
    # Two random projections of each row, read together as one 64-bit key.
    if width not in _PROJECTIONS:
        _PROJECTIONS[width] = numpy.random.default_rng(0).standard_normal((width, 2)).astype("f")
    keys = numpy.ascontiguousarray(X @ _PROJECTIONS[width]).view(numpy.uint64).ravel()
    _, first, inverse = numpy.unique(keys, return_index=True, return_inverse=True)
    if len(first) > MAX_DISTINCT_SHARE * n_rows:
        return None
    # Equal keys from different rows are possible in principle: check.
    if not numpy.array_equal(X[first][inverse], X):
        return None
    return first, inverse.ravel()
