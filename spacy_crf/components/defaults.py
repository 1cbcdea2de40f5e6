"""The factories' default networks: those of configs/cpu.cfg (crf_tagger),
cpu_morph.cfg (crf_morphologizer) and ner_cpu.cfg (crf_ner), a
BiLSTMCRF.v4 on a HashCharEmbed.v5, which differ in a few settings."""

from typing import Any, Dict

from thinc.api import Config

MODEL_CONFIG = """
[model]
@architectures = "spacy_crf.BiLSTMCRF.v4"
hidden_width = 192
depth = 1
dropout = 0.33
input_dropout = 0.2
crf = true
chunk_size = 512
transitions = "{transitions}"
emissions = "{emissions}"

[model.tok2vec]
@architectures = "spacy_crf.HashCharEmbed.v5"
width = 128
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [50000, 2000, 10000, 2000]
nM = 16
nC = {nC}
include_static_vectors = false
min_count = 2
word_dropout = {word_dropout}
sum_byte_gradients = false
word_encoder = null
"""


def default_model(*, transitions: str, emissions: str, nC: int, word_dropout: float) -> Dict[str, Any]:
    """The [model] section of a factory's default config with these settings."""
    text = MODEL_CONFIG.format(transitions=transitions, emissions=emissions, nC=nC, word_dropout=word_dropout)
    return Config().from_str(text)["model"]
