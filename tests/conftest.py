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

# Without CUDA, tests/nn/test_triton_crf.py runs the CRF kernels in Triton's
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


# The longest test files (the project's workflows, the Ray cluster) run first,
# so that a parallel run (`-n auto --dist loadfile`) starts them early and
# ends on short files instead of waiting for one of them.
FIRST = ("tests.test_project", "tests.test_corpus_ray", "tests.test_project_morph")


def pytest_collection_modifyitems(config, items):
    # a stable sort: each file's tests stay together and in their order
    items.sort(key=lambda item: FIRST.index(item.module.__name__) if item.module.__name__ in FIRST else len(FIRST))
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
