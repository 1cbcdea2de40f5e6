import os

# One torch/BLAS thread per test process by default: the tests' batches are
# tiny, and on a machine whose cores are busy (CI, parallel jobs) more threads
# oversubscribe it and slow spaCy training severalfold. SPACY_CRF_TEST_THREADS
# sets another number.
THREADS = int(os.environ.get("SPACY_CRF_TEST_THREADS", "1"))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import pytest  # noqa: E402
import torch  # noqa: E402
from thinc.api import fix_random_seed  # noqa: E402

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


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
