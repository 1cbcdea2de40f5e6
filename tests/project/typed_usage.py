"""Checked by mypy against the installed wheel in .ci/run (not a test module):
a user's mypy reads spacy_crf's annotations (py.typed). Every line is right
but the last, whose wrong type mypy must name."""

import spacy

from spacy_crf import CRFTagger, warmup_linear

nlp = spacy.blank("en")
tagger = nlp.add_pipe("crf_tagger")
assert isinstance(tagger, CRFTagger)
added: int = tagger.add_label("NN")
schedule = warmup_linear(warmup_steps=10, total_steps=100, initial_rate=0.001, resume_rate=0.0)
wrong = warmup_linear(warmup_steps="ten", total_steps=100, initial_rate=0.001, resume_rate=0.0)
