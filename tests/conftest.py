import os

# Two cores here: one thread each for torch and BLAS avoids oversubscription,
# which made spaCy training several times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from thinc.api import fix_random_seed  # noqa: E402

torch.set_num_threads(1)

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
