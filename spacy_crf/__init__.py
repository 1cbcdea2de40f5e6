"""spacy-crf: a linear-chain CRF tagger for spaCy v3, backed by a PyTorch BiLSTM-CRF."""
from .architectures import build_bilstm_crf
from .embed import build_hash_char_embed
from .scorers import make_crf_tagger_scorer
from .tagger import CRFTagger, make_crf_tagger

__version__ = "0.1.0"

__all__ = [
    "CRFTagger",
    "build_bilstm_crf",
    "build_hash_char_embed",
    "make_crf_tagger",
    "make_crf_tagger_scorer",
]
