"""The command line, `python -m spacy_crf COMMAND`: main.py parses it and
runs the corpus job (`tag`), the calibration job (`calibrate`) and spaCy's
commands that key on factory names (spacy_commands.py: `debug-data`,
`displacy`)."""

from .main import main

__all__ = ["main"]
