"""spacy-crf: a linear-chain CRF tagger for spaCy v3, backed by a PyTorch BiLSTM-CRF.

Where things are:
- tagger.py: the `crf_tagger` component (spaCy glue, no tensors);
- targets.py: what "tag", "pos" and "ents" mean (labels, gold values, writing);
- constraints.py: which transitions a tag scheme allows;
- ml/: the Thinc side (architectures, shim, the model's output, the loss);
- nn/: the torch side (CRF maths, loss, constraints, the BiLSTM-CRF network).
"""
from .ml import build_bilstm_crf, build_hash_char_embed, build_hash_char_embed_v2
from .scorers import make_crf_tagger_scorer
from .tagger import CRFPrediction, CRFTagger, make_crf_tagger

__version__ = "0.1.0"

__all__ = [
    "CRFPrediction",
    "CRFTagger",
    "build_bilstm_crf",
    "build_hash_char_embed",
    "build_hash_char_embed_v2",
    "make_crf_tagger",
    "make_crf_tagger_scorer",
]
