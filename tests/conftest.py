import os

# One torch/BLAS thread per test process by default: the tests' batches are
# tiny, and on a machine whose cores are busy (CI, parallel jobs) more threads
# oversubscribe it and slow spaCy training severalfold. SPACY_CRF_TEST_THREADS
# sets another number.
THREADS = int(os.environ.get("SPACY_CRF_TEST_THREADS", "1"))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import pytest  # noqa: E402
import torch  # noqa: E402
from thinc.api import fix_random_seed, get_current_ops, set_current_ops  # noqa: E402

torch.set_num_threads(THREADS)

# Without CUDA, tests/test_triton_crf.py runs the CRF kernels in Triton's
# interpreter, which Triton reads when it is first imported (importing
# spacy-transformers imports it): so here, before any test module.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def seeded():
    """Every test starts from the same random state (numpy, Thinc, torch)."""
    fix_random_seed(int(os.environ.get("SPACY_CRF_TEST_SEED", "0")))


@pytest.fixture(autouse=True)
def thinc_ops_restored():
    """Every test ends on the Thinc ops it started on: a GPU test's
    require_gpu() must not leave the tests after it building their models
    with CupyOps (and their torch networks on the GPU)."""
    ops = get_current_ops()
    yield
    set_current_ops(ops)


def pytest_collection_modifyitems(config, items):
    for item in items:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def shared_fixture_group(item):
    """With pytest-xdist (`-n auto --dist loadgroup`, as the README runs the
    tests) the tests that use one module-scoped fixture (a trained model, a
    project that ran a workflow, a Ray cluster) share a group, so a single
    worker builds the fixture once; the other tests spread over the workers.
    The group is named after the first such fixture the test uses."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name)
        if definitions and definitions[-1].scope == "module":
            return f"{item.module.__name__}::{name}"
    return None
