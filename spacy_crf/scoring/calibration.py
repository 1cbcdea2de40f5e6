"""The calibration keys that the scorers add where the predicted docs carry
probabilities: confidence_ece/_brier of token._.crf_confidence and
ents_prob_ece/_brier of span._.crf_prob."""

from typing import Dict, Iterable, List, Optional

from spacy.tokens import Span, Token
from spacy.training import Example

from ..calibration.metrics import N_BINS, Outcomes, entity_outcomes, token_outcomes
from ..targets import EntityTarget, Target


def calibration_scores(examples: Iterable[Example], target: Target) -> Dict[str, Optional[float]]:
    """The calibration of the probabilities the component stored:

    - confidence_ece, confidence_brier: with store_confidence, the expected
      calibration error (15 equal-width bins) and Brier score of
      token._.crf_confidence, the probability of each token's predicted
      label, against whether it equals the gold label (tokens with a gold
      label only);
    - ents_prob_ece, ents_prob_brier: crf_ner with store_entity_probs, those
      of span._.crf_prob of each predicted entity against whether exactly
      that span and label is a gold entity (judged as ents_p is).

    Keys whose probabilities no predicted doc carries are left out; a key
    is None where no prediction could be judged.

    examples (Iterable[Example]): the predicted and gold docs.
    target (Target): what the component's labels mean.
    RETURNS (Dict[str, Optional[float]]): e.g. {"confidence_ece": 0.02,
        "confidence_brier": 0.04}; {} without stored probabilities.
    """
    tokens: List[Outcomes] = []
    entities: List[Outcomes] = []
    has_confidence = has_probs = False
    read_confidence = Token.has_extension("crf_confidence")
    read_probs = isinstance(target, EntityTarget) and Span.has_extension("crf_prob")
    for eg in examples:
        doc = eg.predicted
        # the component sets a confidence on every token of a doc or on none:
        # one token tells, so a doc without them costs no loop over its tokens
        if read_confidence and len(doc) and doc[0]._.crf_confidence is not None:
            probs = [token._.crf_confidence for token in doc]
            if any(p is not None for p in probs):
                has_confidence = True
                tokens.append(token_outcomes(probs, target.predicted_values(doc), target.gold_values(eg)))
        if read_probs:
            spans = [(ent.start, ent.end, ent.label_, ent._.crf_prob) for ent in doc.ents]
            spans = [span for span in spans if span[3] is not None]
            if spans:
                has_probs = True
                entities.append(entity_outcomes(eg, spans))
    scores: Dict[str, Optional[float]] = {}
    if has_confidence:
        metrics = Outcomes.join(tokens).metrics(N_BINS)
        scores.update(confidence_ece=metrics["ece"], confidence_brier=metrics["brier"])
    if has_probs:
        metrics = Outcomes.join(entities).metrics(N_BINS)
        scores.update(ents_prob_ece=metrics["ece"], ents_prob_brier=metrics["brier"])
    return scores
