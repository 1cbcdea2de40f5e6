"""What crf_tagger predicts: its target, "tag" (token.tag_), "pos" (token.pos_,
UPOS), "tag+pos" (both, as one label per pair) or "ents" (doc.ents through the
tags of an entity scheme).

A target says which labels the training data has, what each token's gold
value is, and how predicted labels are written to the docs. Gold values are
strings per predicted token: a label, "" where unknown (missing or
misaligned: the loss sums over every label there) or "!LABEL" (spaCy's
negative label: LABEL is ruled out). Pure Python and numpy, no torch.
"""
from typing import Dict, Iterable, List, Sequence, Set, Tuple, Union

import numpy
from spacy.attrs import POS, TAG
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.tokens import Doc, Span
from spacy.training import Example, biluo_tags_to_spans
from spacy.vocab import Vocab

UPOS_TAGS = sorted(tag for tag in UPOS_IDS if tag and tag.isupper() and tag != "EOL")

# scheme -> BILUO prefix -> the scheme's prefix
_RENAME = {
    "BILUO": {"B": "B", "I": "I", "L": "L", "U": "U"},
    "IOBES": {"B": "B", "I": "I", "L": "E", "U": "S"},
    "BIO": {"B": "B", "I": "I", "L": "I", "U": "B"},
    "IOB2": {"B": "B", "I": "I", "L": "I", "U": "B"},
}
ENTITY_SCHEMES = tuple(_RENAME)


class TokenTarget:
    """A label per token in a token attribute: "tag" or "pos"."""

    def __init__(self, name: str, attr: int, gold_attr: str) -> None:
        self.name = name
        self.attr = attr
        self.gold_attr = gold_attr
        self.writes = f"token.{name}_"

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        """The labels of the gold tokens (negative labels name one too)."""
        attr = self.name + "_"
        found = {getattr(token, attr).lstrip("!") for eg in examples for token in eg.y}
        return {label for label in found if label}

    def expand_label(self, label: str, scheme: str) -> List[str]:
        """The labels that `add_label(label)` adds."""
        return [label]

    def accepts(self, label: str) -> bool:
        """Whether the label can be written (token.pos_ takes UPOS tags only)."""
        return self.attr != POS or label in UPOS_TAGS

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        """One gold value per predicted token ("" unknown, "!L" excluded)."""
        return [value or "" for value in example.get_aligned(self.gold_attr, as_string=True)]

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        """Set the predicted labels (label ids into `labels`) on the docs."""
        if self.attr == POS:
            values = [UPOS_IDS[label] for label in labels]
        else:
            values = [vocab.strings.add(label) for label in labels]
        label_values = numpy.asarray(values, dtype="uint64")
        for doc, doc_ids in zip(docs, ids):
            if not len(doc):
                continue
            new = label_values[numpy.asarray(doc_ids, dtype="int64")]
            if not overwrite:
                old = doc.to_array(self.attr)
                new = numpy.where(old == 0, new, old)
            doc.from_array([self.attr], new.reshape(-1, 1))


class EntityTarget:
    """Entities as token tags of a scheme (BILUO, IOBES, BIO/IOB2)."""

    name = "ents"
    writes = "doc.ents"

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        types = {ent.label_ for eg in examples for ent in eg.y.ents}
        return set(entity_tags(types, scheme)) if types else set()

    def expand_label(self, label: str, scheme: str) -> List[str]:
        """An entity type ("PER") adds its tags and "O"; a tag adds itself."""
        if label != "O" and "-" not in label:
            return entity_tags([label], scheme)
        return [label]

    def accepts(self, label: str) -> bool:
        return True

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        return gold_entity_tags(example, scheme)

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        for doc, doc_ids in zip(docs, ids):
            spans = tags_to_spans(doc, [labels[i] for i in doc_ids], scheme)
            if overwrite:
                doc.ents = spans
            else:
                taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
                new = [s for s in spans if not taken.intersection(range(s.start, s.end))]
                doc.set_ents(list(doc.ents) + new, default="unmodified")


class JointTarget:
    """XPOS and UPOS together: one label per token for the pair seen in
    training, e.g. "NNS|NOUN", written to token.tag_ and token.pos_.

    A token whose tag or pos is missing (or a negative label) is unknown: the
    loss sums over every pair there.
    """

    name = "tag+pos"
    writes = "token.tag_ and token.pos_"
    SEPARATOR = "|"

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        return {
            value
            for eg in examples
            for value in (self._pair(token.tag_, token.pos_) for token in eg.y)
            if value
        }

    def expand_label(self, label: str, scheme: str) -> List[str]:
        return [label]

    def accepts(self, label: str) -> bool:
        """A "TAG|UPOS" pair whose second half is a UPOS tag."""
        return self.split(label)[1] in UPOS_TAGS

    def split(self, label: str) -> Tuple[str, str]:
        """("NNS", "NOUN") of "NNS|NOUN"."""
        tag, _, pos = label.rpartition(self.SEPARATOR)
        return tag, pos

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        tags = example.get_aligned("TAG", as_string=True)
        poses = example.get_aligned("POS", as_string=True)
        return [self._pair(tag, pos) for tag, pos in zip(tags, poses)]

    def _pair(self, tag: str, pos: str) -> str:
        if not tag or not pos or tag.startswith("!") or pos.startswith("!"):
            return ""
        return f"{tag}{self.SEPARATOR}{pos}"

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        pairs = [self.split(label) for label in labels]
        TARGETS["tag"].write(vocab, docs, [t for t, _ in pairs], ids, overwrite=overwrite, scheme=scheme)
        TARGETS["pos"].write(vocab, docs, [p for _, p in pairs], ids, overwrite=overwrite, scheme=scheme)


Target = Union[TokenTarget, EntityTarget, JointTarget]

TARGETS: Dict[str, Target] = {
    "tag": TokenTarget("tag", TAG, "TAG"),
    "pos": TokenTarget("pos", POS, "POS"),
    "tag+pos": JointTarget(),
    "ents": EntityTarget(),
}


def gold_ids(
    values: Sequence[str], labels: Sequence[str]
) -> Tuple[numpy.ndarray, numpy.ndarray, List[str]]:
    """Label ids of gold values: (ids, excluded ids, unknown labels).

    values (Sequence[str]): gold values, one per token.
    labels (Sequence[str]): the labels, in id order.
    RETURNS: int64 ids (-1 where unknown), int64 excluded ids ("!L"; -1 for
        none), and the values that are not labels (the caller decides).
    """
    index = {label: i for i, label in enumerate(labels)}
    tags = numpy.full(len(values), -1, dtype="int64")
    excluded = numpy.full(len(values), -1, dtype="int64")
    unknown = []
    for i, value in enumerate(values):
        if not value:
            continue
        if value in index:
            tags[i] = index[value]
        elif value.startswith("!"):
            excluded[i] = index.get(value[1:], -1)
        else:
            unknown.append(value)
    return tags, excluded, unknown


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
