"""torch as an optional dependency: serving (loading a pipeline, tagging,
probabilities) runs on numpy and Numba alone (spacy_crf.engine); training,
int8 quantization and the torch engine need `pip install "spacy-crf[torch]"`."""

from functools import lru_cache

from .errors import Errors

EXTRA = 'pip install "spacy-crf[torch]"'


@lru_cache(maxsize=1)
def has_torch() -> bool:
    """Whether torch is installed and imports (cached for the process)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def torch_needed(feature: str) -> ImportError:
    """E050 (an ImportError): the feature needs torch, and the extra that brings it."""
    return ImportError(Errors.E050.format(feature=feature, extra=EXTRA))


def require_torch(feature: str) -> None:
    """Raise E050 naming the feature and the extra where torch is not installed."""
    if not has_torch():
        raise torch_needed(feature)
