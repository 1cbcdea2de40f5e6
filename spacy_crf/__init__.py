"""spacy-crf: linear-chain CRF components for spaCy v3, backed by a PyTorch BiLSTM-CRF.

Where things are, from the ground up (a module imports only from below):
- errors.py, files.py, threads.py, batching.py, schedules.py, typed_api.py:
  coded errors, atomic saving, CPU threads, batches of words, the
  learning-rate schedule, typed access to spaCy's and Thinc's run-time API;
- nn/: the torch side (the CRF maths, the network; the Triton and Numba
  kernels in nn/kernels/); targets/: what the labels of each component mean
  (tags, morphology, entities and their tag schemes); readers.py: a training
  corpus of gold-tokenised sentences and whole docs; resumable_training.py:
  spaCy's training loop with checkpoints;
- ml/: the Thinc side (the registered architectures, their superseded
  versions in ml/legacy.py, the shim, the model's output, the loss);
- calibration/: ECE and Brier of the probabilities, and the temperature fit;
- scoring/: the components' scorers and 0.x's crf_tagger scorers;
- components/: the pipeline components crf_tagger, crf_morphologizer and
  crf_ner on one base (spaCy glue, no torch), and the 0.x crf_tagger routes;
- the jobs: corpus/ (tagging a corpus with a trained pipeline, local engine
  or Ray Data) and calibrate.py (fitting a pipeline's temperature);
- cli/: the command line, `python -m spacy_crf`.

The public names below are the functions behind the registered names.
"""

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
    make_learn_new_labels,
)
from .ml import build_bilstm_crf_v4, build_char_cnn_v2, build_hash_char_embed_v5
from .readers import create_sentences_and_docs_reader
from .schedules import warmup_linear
from .scoring import make_morphologizer_scorer, make_ner_scorer, make_tagger_scorer

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
    "make_learn_new_labels",
    "make_morphologizer_scorer",
    "make_ner_scorer",
    "make_tagger_scorer",
    "warmup_linear",
]
