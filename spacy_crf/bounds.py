"""The bounds on the sizes that callers and files control, each checked
before memory is spent on it: n-best's k, the number of labels, the size of a
component's saved files and of a DocBin input of the corpus job. Each can be raised, for a machine that has the
memory, with an environment variable (read at every check). The thread
count's bound is a setting's (spacy_crf.components.settings), and the corpus
job's line length an option of the job. No spaCy, no torch."""

import os
from dataclasses import dataclass

from .errors import Errors


@dataclass(frozen=True)
class Bound:
    """The largest value of a size, and how to raise it.

    name (str): what is counted, for messages ("labels").
    default (int): the bound where the environment does not set it.
    env (str): the environment variable that sets it.
    """

    name: str
    default: int
    env: str

    def value(self) -> int:
        """RETURNS (int): the bound in force: the environment's, else the default."""
        text = os.environ.get(self.env, "").strip()
        if not text:
            return self.default
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(Errors.E046.format(env=self.env, value=text, name=self.name))
        return value

    def how_to_raise(self) -> str:
        """RETURNS (str): the sentence that says how to raise the bound."""
        return f"set the environment variable {self.env} to raise it"


# n-best keeps k partial paths per label and token: memory k x tokens x labels
MAX_NBEST = Bound("n-best paths per doc", 1_000, "SPACY_CRF_MAX_NBEST")
# a transition matrix of n x n cells, ~66 bytes each while training
MAX_LABELS = Bound("labels", 5_000, "SPACY_CRF_MAX_LABELS")
# a component's weights ("model") and its cfg, each read whole
MAX_MODEL_BYTES = Bound("bytes of a model file", 8 << 30, "SPACY_CRF_MAX_MODEL_BYTES")
MAX_CFG_BYTES = Bound("bytes of a cfg file", 256 << 20, "SPACY_CRF_MAX_CFG_BYTES")
# a DocBin input file of the corpus job, read whole (a larger one is a bad file)
MAX_DOCBIN_BYTES = Bound("bytes of a DocBin input file", 4 << 30, "SPACY_CRF_MAX_DOCBIN_BYTES")
