"""spacy-crf: linear-chain CRF components for spaCy v3, backed by a PyTorch BiLSTM-CRF.

Where things are:
- components/: the pipeline components crf_tagger, crf_morphologizer and
  crf_ner on one base (spaCy glue, no torch);
- targets/: what the labels of each component mean (tags, morphology,
  entities and their tag schemes);
- scorers.py: the components' scorers; calibration/: ECE and Brier of their
  probabilities, and fitting their temperature (`calibrate`);
- ml/: the Thinc side (the registered architectures, the shim, the model's
  output, the loss); nn/: the torch side (the CRF maths, the network; the
  Triton and Numba kernels in nn/kernels/);
- readers.py: a training corpus of gold-tokenised sentences and whole docs;
  schedules.py: the learning-rate schedule of the shipped configs;
- threads.py, batching.py, files.py, errors.py: CPU threads, batches of
  words, atomic saving, coded errors;
- legacy.py: superseded registered versions;
- corpus/: tagging a corpus with a trained pipeline (local engine or Ray Data).

The public names below are the functions behind the registered names.
"""

from . import legacy  # noqa: F401  (registers the superseded versions)
from .about import __version__
from .components import (
    CRFComponent,
    CRFEntityRecognizer,
    CRFMorphologizer,
    CRFPrediction,
    CRFTagger,
    make_crf_morphologizer,
    make_crf_ner,
    make_crf_tagger,
)
from .ml import build_bilstm_crf_v4, build_char_cnn_v2, build_hash_char_embed_v5
from .readers import create_sentences_and_docs_reader
from .schedules import warmup_linear
from .scorers import make_morphologizer_scorer, make_ner_scorer, make_tagger_scorer

__all__ = [
    "CRFComponent",
    "CRFEntityRecognizer",
    "CRFMorphologizer",
    "CRFPrediction",
    "CRFTagger",
    "__version__",
    "build_bilstm_crf_v4",
    "build_char_cnn_v2",
    "build_hash_char_embed_v5",
    "create_sentences_and_docs_reader",
    "make_crf_morphologizer",
    "make_crf_ner",
    "make_crf_tagger",
    "make_morphologizer_scorer",
    "make_ner_scorer",
    "make_tagger_scorer",
    "warmup_linear",
]
