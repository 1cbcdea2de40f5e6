"""`python -m spacy_crf`: the command line (spacy_crf.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
