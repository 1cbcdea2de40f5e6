"""pyarrow, which Parquet input and output need: an optional dependency.

pyarrow is in the "corpus" extra (pip install "spacy-crf[corpus]"), not a core
dependency: JSON Lines, plain text and DocBin input and output work without it.
"""

from types import ModuleType

from ..errors import CorpusErrors


def import_pyarrow(*, action: str) -> ModuleType:
    """pyarrow, with pyarrow.parquet loaded, or E113 when it is not installed.

    action (str): what needs it, "Reading" or "Writing", for the message.
    RETURNS (ModuleType): the pyarrow module.
    """
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError as err:
        raise ImportError(CorpusErrors.E113.format(action=action)) from err
    return pyarrow
