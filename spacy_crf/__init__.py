"""spacy-crf: a linear-chain CRF tagger for spaCy v3, backed by a PyTorch BiLSTM-CRF.

Where things are:
- tagger.py: the `crf_tagger` component (spaCy glue, no tensors);
- targets.py: what "tag", "pos", "tag+pos", "morph", "pos+morph", "tag+pos+morph"
  and "ents" mean (labels, gold values, writing);
- constraints.py: which transitions a tag scheme allows;
- threads.py: the CPU thread count of the component's torch work;
- schedules.py: the learning-rate schedule of the shipped configs;
- files.py: atomic writes and the checksum of saved components;
- readers.py: a training corpus of gold-tokenised sentences and whole docs;
- calibration.py: ECE, Brier score and reliability bins of probabilities;
- temperature.py: fitting the temperature of the CRF's probabilities (`calibrate`);
- ml/: the Thinc side (architectures, shim, the model's output, the loss);
- nn/: the torch side (CRF maths and kernels, loss, constraints, the network);
- corpus/: tagging a corpus with a trained pipeline (local engine or Ray Data).

The public names below are the functions behind the registered names, one
export per registered version.
"""
from .about import __version__
from .ml import (
    build_bilstm_crf,
    build_bilstm_crf_v2,
    build_bilstm_crf_v3,
    build_char_cnn,
    build_hash_char_embed,
    build_hash_char_embed_v2,
    build_hash_char_embed_v3,
    build_hash_char_embed_v4,
)
from .readers import create_sentences_and_docs_reader
from .schedules import warmup_linear
from .scorers import make_crf_tagger_scorer, make_crf_tagger_scorer_v2
from .tagger import CRFPrediction, CRFTagger, make_crf_tagger

__all__ = [
    "CRFPrediction",
    "CRFTagger",
    "__version__",
    "build_bilstm_crf",
    "build_bilstm_crf_v2",
    "build_bilstm_crf_v3",
    "build_char_cnn",
    "build_hash_char_embed",
    "build_hash_char_embed_v2",
    "build_hash_char_embed_v3",
    "build_hash_char_embed_v4",
    "create_sentences_and_docs_reader",
    "make_crf_tagger",
    "make_crf_tagger_scorer",
    "make_crf_tagger_scorer_v2",
    "warmup_linear",
]
