"""Tag schemes (BIO/IOB2, BILUO, IOBES): how their prefixes are named and
which transitions they allow.

`allowed_transitions(labels, scheme)` gives which label may follow which, which
may start and which may end a sequence. The component sets every forbidden
score to a fixed log(0) in the loss, the marginals, n-best and Viterbi alike,
so an invalid sequence has probability exactly 0 and is never output. Pure numpy.
"""

from typing import List, Optional, Sequence, Tuple

import numpy

from ..errors import Errors

# scheme -> BILUO prefix -> the scheme's prefix
RENAME = {
    "BILUO": {"B": "B", "I": "I", "L": "L", "U": "U"},
    "IOBES": {"B": "B", "I": "I", "L": "E", "U": "S"},
    "BIO": {"B": "B", "I": "I", "L": "I", "U": "B"},
    "IOB2": {"B": "B", "I": "I", "L": "I", "U": "B"},
}
ENTITY_SCHEMES = tuple(RENAME)

SCHEMES = ("none", "BIO", "IOB2", "BILUO", "IOBES")
# scheme -> (begin, inside, last, unit) prefixes; None where the scheme has none
_PREFIXES = {
    "BIO": ("B", "I", None, None),
    "IOB2": ("B", "I", None, None),
    "BILUO": ("B", "I", "L", "U"),
    "IOBES": ("B", "I", "E", "S"),
}


def is_scheme_tag(label: str, scheme: str) -> bool:
    """Whether a label is a tag of the scheme: "O", or a prefix of the
    scheme ("B", "I", ...), a hyphen and a type ("B-PER")."""
    prefix, sep, entity = label.partition("-")
    return label == "O" or bool(sep and entity and prefix in {p for p in _PREFIXES[scheme] if p})


def _parse(label: str, scheme: str) -> Tuple[Optional[str], Optional[str]]:
    """(prefix, entity type) of a label; ("O", None) for the outside label."""
    if label == "O":
        return "O", None
    prefix, sep, entity = label.partition("-")
    if not sep or not entity or prefix not in {p for p in _PREFIXES[scheme] if p}:
        raise ValueError(Errors.E013.format(label=label, scheme=scheme))
    return prefix, entity


def allowed_transitions(labels: Sequence[str], scheme: str) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """Which transitions, first labels and last labels a scheme allows.

    labels (Sequence[str]): the labels, e.g. ["B-PER", "I-PER", "O"].
    scheme (str): one of SCHEMES; "none" allows everything.
    RETURNS (Tuple[ndarray, ndarray, ndarray]): bool (K, K) transitions[i, j]
        (label j may follow label i), (K,) start and (K,) end.
    """
    if scheme not in SCHEMES:
        raise ValueError(Errors.E014.format(scheme=scheme, options=list(SCHEMES)))
    K = len(labels)
    if scheme == "none":
        return numpy.ones((K, K), dtype=bool), numpy.ones(K, dtype=bool), numpy.ones(K, dtype=bool)
    begin, inside, last, unit = _PREFIXES[scheme]
    parsed: List[Tuple[Optional[str], Optional[str]]] = [_parse(label, scheme) for label in labels]
    # a label "continues" an entity if it must follow one of the same type
    continues = [p in (inside, last) for p, _ in parsed]
    # a label "is open" if an entity of its type must continue after it
    if last is None:  # BIO: an entity may end anywhere
        is_open = [False] * K
        can_follow = [p in (begin, inside) for p, _ in parsed]
    else:
        is_open = [p in (begin, inside) for p, _ in parsed]
        can_follow = is_open
    transitions = numpy.zeros((K, K), dtype=bool)
    for i, (_, type_i) in enumerate(parsed):
        for j, (_, type_j) in enumerate(parsed):
            if continues[j]:
                transitions[i, j] = can_follow[i] and type_i == type_j
            else:
                transitions[i, j] = not is_open[i]
    start = numpy.array([not c for c in continues], dtype=bool)
    end = numpy.array([not o for o in is_open], dtype=bool)
    return transitions, start, end
