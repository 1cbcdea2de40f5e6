"""The entity target: doc.ents through the token tags of a scheme (BILUO,
IOBES, BIO/IOB2), and the spans a tag path makes (`span_patterns`, for exact
span posteriors). See tokens.py for what a target is. Pure Python and numpy.
"""

from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy
from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.tokens import Doc, Span
from spacy.training import Example, biluo_tags_to_spans
from spacy.training.iob_utils import doc_to_biluo_tags, tags_to_entities
from spacy.vocab import Vocab

from ..errors import Errors
from .schemes import ENTITY_SCHEMES, RENAME, is_scheme_tag


class EntityTarget:
    """Entities as token tags of a scheme (BILUO, IOBES, BIO/IOB2).

    scheme (str): the tag scheme, one of ENTITY_SCHEMES.
    """

    name = "ents"
    writes = "doc.ents"

    def __init__(self, scheme: str) -> None:
        if scheme not in ENTITY_SCHEMES:
            raise ValueError(Errors.E014.format(scheme=scheme, options=list(ENTITY_SCHEMES)))
        self.scheme = scheme

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        """The tags of the scheme for the entity types of the gold docs."""
        types = {ent.label_ for eg in examples for ent in eg.y.ents}
        return set(entity_tags(types, self.scheme)) if types else set()

    def expand_label(self, label: str) -> List[str]:
        """An entity type ("PER", "LARGE-ANIMAL") gives its tags and "O"; a
        tag of the scheme ("B-PER", "O") gives itself."""
        if is_scheme_tag(label, self.scheme):
            return [label]
        return entity_tags([label], self.scheme)

    def is_tag(self, label: str) -> bool:
        """Whether a label is a tag of the scheme rather than an entity type."""
        return is_scheme_tag(label, self.scheme)

    def accepts(self, label: str) -> bool:
        return True

    def gold_values(self, example: Example) -> List[str]:
        return gold_entity_tags(example, self.scheme)

    def predicted_values(self, doc: Doc) -> List[str]:
        """The tag of the scheme of each token from doc.ents; "O" outside
        every entity (where `write` sets the token's IOB to "O")."""
        rename = RENAME[self.scheme]
        return [tag if tag == "O" else f"{rename[tag[0]]}{tag[1:]}" for tag in doc_to_biluo_tags(doc)]

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
    ) -> None:
        for doc, doc_ids in zip(docs, ids):
            spans = tags_to_spans(doc, [labels[i] for i in doc_ids], self.scheme)
            if overwrite:
                doc.ents = spans
            else:
                # as spaCy's ner: a preset entity stays, a blocked token
                # (doc.set_ents(blocked=...): IOB "B" without a type) stays
                # blocked, and every other token is written, "O" outside the
                # entities (a preset "O" may become an entity, as there)
                iob_type = doc.to_array([ENT_IOB, ENT_TYPE]).reshape(-1, 2)  # no loop over tokens
                blocked = numpy.flatnonzero((iob_type[:, 0] == 3) & (iob_type[:, 1] == 0)).tolist()
                taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}.union(blocked)
                new = [s for s in spans if not taken.intersection(range(s.start, s.end))]
                doc.set_ents(list(doc.ents) + new, blocked=[doc[i : i + 1] for i in blocked], default="outside")

    def span_patterns(self, labels: Sequence[str]) -> Tuple[List[str], List[Tuple[int, int, int, int, int]]]:
        """`span_patterns` of the labels in this scheme."""
        return span_patterns(labels, self.scheme)

    def offsets(self, tags: Sequence[str]) -> List[Tuple[int, int, str]]:
        """`entity_offsets` of a tag path in this scheme."""
        return entity_offsets(tags, self.scheme)


def entity_tags(entity_types: Iterable[str], scheme: str) -> List[str]:
    """All tags of the scheme for these entity types, sorted, with "O"."""
    prefixes = sorted(set(RENAME[scheme].values()))
    return sorted({"O"} | {f"{p}-{t}" for t in entity_types for p in prefixes})


def gold_entity_tags(example: Example, scheme: str) -> List[str]:
    """One tag per predicted token; "" where the gold is missing or misaligned."""
    rename = RENAME[scheme]
    tags = []
    for tag in example.get_aligned_ner():
        if tag is None or tag == "-" or tag == "":
            tags.append("")
        elif tag == "O":
            tags.append("O")
        else:
            prefix, _, kind = tag.partition("-")
            tags.append(f"{rename[prefix]}-{kind}")
    return tags


def tags_to_spans(doc: Doc, tags: Sequence[str], scheme: str) -> List[Span]:
    """Entity spans of a valid tag sequence of the scheme."""
    return biluo_tags_to_spans(doc, _as_biluo(tags, scheme))


def entity_offsets(tags: Sequence[str], scheme: str) -> List[Tuple[int, int, str]]:
    """(start, end, type) of the entities of a valid tag sequence of the
    scheme, token offsets with the end exclusive: the spans `tags_to_spans`
    makes, without a Doc."""
    return [(start, end + 1, kind) for kind, start, end in tags_to_entities(_as_biluo(tags, scheme))]


def _as_biluo(tags: Sequence[str], scheme: str) -> List[str]:
    """The BILUO tags of a valid tag sequence of the scheme."""
    if scheme in ("BILUO", "IOBES"):
        back = {v: k for k, v in RENAME[scheme].items()}
        return [t if t == "O" else f"{back[t[0]]}{t[1:]}" for t in tags]
    biluo = []
    for i, tag in enumerate(tags):
        if tag == "O":
            biluo.append("O")
            continue
        prefix, kind = tag[0], tag[2:]
        continues = i + 1 < len(tags) and tags[i + 1] == f"I-{kind}"
        if prefix == "B":
            biluo.append(f"B-{kind}" if continues else f"U-{kind}")
        else:
            biluo.append(f"I-{kind}" if continues else f"L-{kind}")
    return biluo


# scheme -> the prefixes of (single, first, middle, last, not_after) in a span
# pattern; None: no label must be kept from following the span
_SPAN_PREFIXES: Dict[str, Tuple[Optional[str], Optional[str], Optional[str], Optional[str], Optional[str]]] = {
    "BILUO": ("U", "B", "I", "L", None),
    "IOBES": ("S", "B", "I", "E", None),
    "BIO": ("B", "B", "I", "I", "I"),
    "IOB2": ("B", "B", "I", "I", "I"),
}


def span_patterns(labels: Sequence[str], scheme: str) -> Tuple[List[str], List[Tuple[int, int, int, int, int]]]:
    """The entity types of a scheme's labels and, per type, the label ids
    that make one entity span, as `spacy_crf.nn.spans` takes them.

    A span of tokens i..j of type X is, on a tag path (as `tags_to_spans`
    reads the paths the scheme's constraints allow):
    - BILUO: U-X at i if j == i; else B-X at i, I-X at i+1..j-1, L-X at j;
    - IOBES: the same with S, B, I, E;
    - BIO, IOB2: B-X at i, I-X at i+1..j, and the tag at j+1 is not I-X (or
      j is the last token). A span never starts with I-X: `tags_to_spans`
      does not read a lone I-X as an entity (spaCy rejects it), and the
      scheme's constraints give such paths probability 0.

    labels (Sequence[str]): the component's labels, in id order ("O" and
        "PREFIX-TYPE" tags of the scheme).
    scheme (str): "BILUO", "IOBES", "BIO" or "IOB2".
    RETURNS (Tuple[List[str], List[Tuple[int, int, int, int, int]]]): the
        types, sorted, and per type the ids of its (single, first, middle,
        last, not_after) labels; -1 where there is no such label (a missing
        tag: the spans that need it have probability 0; not_after -1: none).
    """
    if scheme not in _SPAN_PREFIXES:
        raise ValueError(Errors.E014.format(scheme=scheme, options=list(ENTITY_SCHEMES)))
    prefixes = set(RENAME[scheme].values())
    index: Dict[Tuple[str, str], int] = {}
    for i, label in enumerate(labels):
        if label == "O":
            continue
        prefix, sep, kind = label.partition("-")
        if not sep or not kind or prefix not in prefixes:
            raise ValueError(Errors.E013.format(label=label, scheme=scheme))
        index[(prefix, kind)] = i
    types = sorted({kind for _, kind in index})
    single, first, middle, last, after = _SPAN_PREFIXES[scheme]

    def label_id(prefix: Optional[str], kind: str) -> int:
        return -1 if prefix is None else index.get((prefix, kind), -1)

    patterns = [
        (label_id(single, k), label_id(first, k), label_id(middle, k), label_id(last, k), label_id(after, k))
        for k in types
    ]
    return types, patterns
