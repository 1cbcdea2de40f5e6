"""Entities as token tags for target = "ents": gold spans to tags, tags to spans.

Tags follow the component's scheme: BILUO (spaCy's own), IOBES (the same with
E- and S-), or BIO/IOB2. Missing gold annotation becomes an empty tag, which the
loss treats as unknown (a partial label).
"""
from typing import Iterable, List, Sequence

from spacy.tokens import Doc, Span
from spacy.training import Example, biluo_tags_to_spans

# scheme -> BILUO prefix -> the scheme's prefix (None: not used)
_RENAME = {
    "BILUO": {"B": "B", "I": "I", "L": "L", "U": "U"},
    "IOBES": {"B": "B", "I": "I", "L": "E", "U": "S"},
    "BIO": {"B": "B", "I": "I", "L": "I", "U": "B"},
    "IOB2": {"B": "B", "I": "I", "L": "I", "U": "B"},
}
ENTITY_SCHEMES = tuple(_RENAME)


def entity_tags(entity_types: Iterable[str], scheme: str) -> List[str]:
    """All tags of the scheme for these entity types, sorted, with "O"."""
    prefixes = sorted(set(_RENAME[scheme].values()))
    return sorted({"O"} | {f"{p}-{t}" for t in entity_types for p in prefixes})


def gold_entity_tags(example: Example, scheme: str) -> List[str]:
    """One tag per predicted token; "" where the gold is missing or misaligned."""
    rename = _RENAME[scheme]
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
    if scheme in ("BILUO", "IOBES"):
        back = {v: k for k, v in _RENAME[scheme].items()}
        biluo = [t if t == "O" else f"{back[t[0]]}{t[1:]}" for t in tags]
    else:
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
    return biluo_tags_to_spans(doc, biluo)
