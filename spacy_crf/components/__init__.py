"""The pipeline components: crf_tagger (tagger.py), crf_morphologizer
(morphologizer.py) and crf_ner (ner.py) on one base (base.py, with training.py
and saving.py); settings.py declares their settings, defaults.py their
default networks; tagger_0x.py routes crf_tagger's 0.x settings;
fine_tuning.py is the callback that fine-tunes a sourced component on new
labels. No torch here."""

from .base import CRFComponent, CRFPrediction
from .fine_tuning import make_learn_new_labels
from .morphologizer import CRFMorphologizer, make_crf_morphologizer
from .ner import CRFEntityRecognizer, make_crf_ner
from .tagger import CRFTagger, make_crf_tagger

__all__ = [
    "CRFComponent",
    "CRFEntityRecognizer",
    "CRFMorphologizer",
    "CRFPrediction",
    "CRFTagger",
    "make_learn_new_labels",
    "make_crf_morphologizer",
    "make_crf_ner",
    "make_crf_tagger",
]
