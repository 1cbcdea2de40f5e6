"""Torch code of spacy-crf: the CRF maths, its losses (NLL, distillation KL) and constraints, and the BiLSTM-CRF network (no spaCy).

log_partition, negative_log_likelihood, viterbi_decode, marginals and
nbest_decode are dispatch.py's: the fused Triton kernels on CUDA, factored.py
for class-factored transitions, the torch reference (spacy_crf.nn.crf)
otherwise; see dispatch.py for the `kernels` switch.
"""

from .constraints import constrain
from .crf import (
    NEG_INF,
    CRFScores,
    allowed_from_tags,
    check_scores,
    path_score,
)
from .divergence import kl_divergence
from .factored import factored_transitions
from .kernels.dispatch import (
    log_partition,
    marginals,
    nbest_decode,
    negative_log_likelihood,
    viterbi_decode,
    viterbi_decode_packed,
)
from .loss import crf_loss
from .network import BiLSTMCRF
from .packed import PackedScores
from .spans import all_span_log_probs, forward_backward, span_log_probs

__all__ = [
    "BiLSTMCRF",
    "CRFScores",
    "NEG_INF",
    "PackedScores",
    "all_span_log_probs",
    "allowed_from_tags",
    "check_scores",
    "constrain",
    "factored_transitions",
    "crf_loss",
    "forward_backward",
    "kl_divergence",
    "log_partition",
    "marginals",
    "nbest_decode",
    "negative_log_likelihood",
    "path_score",
    "span_log_probs",
    "viterbi_decode",
    "viterbi_decode_packed",
]
