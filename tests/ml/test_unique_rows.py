"""unique_rows: with_array's results, computed once per distinct row."""

import numpy
import pytest
from thinc.api import Maxout, NumpyOps, with_array
from thinc.types import Ragged

from spacy_crf.ml.unique_rows import distinct_rows, unique_rows


def _ragged_with_repeats(seed=0, n_distinct=7, n_rows=40, width=6):
    rng = numpy.random.default_rng(seed)
    table = rng.standard_normal((n_distinct, width)).astype("f")
    X = table[rng.integers(0, n_distinct, n_rows)]
    return Ragged(X, NumpyOps().asarray1i([10, 25, 5]))


def _twins(seed=0):
    """The same Maxout twice, one wrapped by with_array, one by unique_rows."""
    plain = with_array(Maxout(4, 6, nP=3, normalize=True))
    grouped = unique_rows(Maxout(4, 6, nP=3, normalize=True))
    X = _ragged_with_repeats(seed)
    plain.initialize(X=X)
    grouped.initialize(X=X)
    grouped.from_bytes(plain.to_bytes())
    return plain, grouped, X


def test_distinct_rows_groups_exactly():
    X = _ragged_with_repeats().dataXd
    first, inverse = distinct_rows(X)
    assert len(first) == len(numpy.unique(X, axis=0))
    assert numpy.array_equal(X[first][inverse], X)


@pytest.mark.parametrize(
    "X",
    [
        numpy.zeros((1, 3), dtype="f"),
        numpy.random.default_rng(0).standard_normal((20, 3)).astype("f"),
        numpy.full((5, 3), numpy.nan, dtype="f"),
        numpy.ones((6, 3), dtype="float64"),
    ],
)
def test_distinct_rows_declines_when_it_cannot_help(X):
    assert distinct_rows(X) is None


def test_outputs_and_gradients_equal_with_array():
    plain, grouped, X = _twins()
    Y_plain, back_plain = plain(X, is_train=True)
    Y_grouped, back_grouped = grouped(X, is_train=True)
    assert numpy.allclose(Y_plain.dataXd, Y_grouped.dataXd, atol=1e-6)
    assert numpy.array_equal(Y_plain.lengths, Y_grouped.lengths)
    dY = Ragged(
        numpy.random.default_rng(1).standard_normal(Y_plain.dataXd.shape).astype("f"),
        Y_plain.lengths,
    )
    dX_plain = back_plain(dY).dataXd
    dX_grouped = back_grouped(dY).dataXd
    # Per distinct row, the summed input gradient is the same.
    first, inverse = distinct_rows(X.dataXd)
    for group in range(len(first)):
        rows = inverse == group
        assert numpy.allclose(dX_plain[rows].sum(0), dX_grouped[rows].sum(0), atol=1e-5)
    # And so is every parameter gradient.
    for node_plain, node_grouped in zip(plain.walk(), grouped.walk()):
        for name in node_plain.grad_names:
            assert numpy.allclose(node_plain.get_grad(name), node_grouped.get_grad(name), atol=1e-5), name


def test_loads_a_with_array_model():
    plain, _, X = _twins(seed=2)
    grouped = unique_rows(Maxout(4, 6, nP=3, normalize=True)).from_bytes(plain.to_bytes())
    assert numpy.allclose(plain.predict(X).dataXd, grouped.predict(X).dataXd, atol=1e-6)
