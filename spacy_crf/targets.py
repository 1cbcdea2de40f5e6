"""What crf_tagger predicts: its target, "tag" (token.tag_), "pos" (token.pos_,
UPOS), "tag+pos" (both, as one label per pair), "morph" (token.morph, UD
features), "pos+morph" (token.pos_ and token.morph, as one label per bundle, in
spaCy's morphologizer format), "tag+pos+morph" (token.tag_ as well: one label
per XPOS and bundle, UDPipe's AllTags) or "ents" (doc.ents through the tags of
an entity scheme).

A target says which labels the training data has, what each token's gold
value is, how predicted labels are written to the docs and how they are read
back (`predicted_values`, which calibration metrics compare with the gold).
Gold values are strings per predicted token: a label, "" where unknown (missing or
misaligned: the loss sums over every label there) or "!LABEL" (spaCy's
negative label: LABEL is ruled out). Pure Python and numpy, no torch.
"""
import functools
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import numpy
from spacy.attrs import MORPH, POS, TAG
from spacy.morphology import Morphology
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.strings import StringStore
from spacy.tokens import Doc, Span
from spacy.training import Example, biluo_tags_to_spans
from spacy.training.iob_utils import doc_to_biluo_tags, tags_to_entities
from spacy.vocab import Vocab

from .errors import Errors

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

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The label each token has in the doc, "" where unset: what
        `gold_values` is compared with."""
        attr = self.name + "_"
        return [getattr(token, attr) for token in doc]

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        """Set the predicted labels (label ids into `labels`) on the docs."""
        if self.attr == POS:
            values = [UPOS_IDS[label] for label in labels]
        else:
            values = [vocab.strings.add(label) for label in labels]
        write_token_attr(docs, self.attr, values, ids, overwrite=overwrite)


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

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The tag of the scheme of each token from doc.ents; "O" outside
        every entity, whether or not the token's IOB is set (`write` leaves
        it unset there)."""
        rename = _RENAME[scheme]
        return [tag if tag == "O" else f"{rename[tag[0]]}{tag[1:]}" for tag in doc_to_biluo_tags(doc)]

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

    def label_class(self, label: str) -> str:
        """The class of a label for factored transitions: its UPOS."""
        return self.split(label)[1]

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: its tag and its UPOS."""
        tag, pos = self.split(label)
        return [f"TAG={tag}", f"POS={pos}"]

    def split(self, label: str) -> Tuple[str, str]:
        """("NNS", "NOUN") of "NNS|NOUN"."""
        tag, _, pos = label.rpartition(self.SEPARATOR)
        return tag, pos

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        tags = example.get_aligned("TAG", as_string=True)
        poses = example.get_aligned("POS", as_string=True)
        return [self._pair(tag, pos) for tag, pos in zip(tags, poses)]

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The "TAG|UPOS" pair of each token, "" where either is unset."""
        return [self._pair(token.tag_, token.pos_) for token in doc]

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


class MorphTarget:
    """UD morphological features in token.morph: one label per analysis seen
    in training, in spaCy's canonical FEATS format (fields and values sorted,
    as token.morph keys them): "Case=Nom|Number=Plur", and "_" for a token
    annotated with no features.

    A token whose morph is unset (never annotated) or misaligned is unknown,
    never "no features"; a negative label "!Case=Nom" rules that analysis out.
    """

    name = "morph"
    writes = "token.morph"

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        """The analyses of the gold tokens (negative labels name one too)."""
        found = {morph.lstrip("!") for eg in examples for morph in doc_morphs(eg.y)}
        return {normalize_morph(morph) for morph in found if morph}

    def expand_label(self, label: str, scheme: str) -> List[str]:
        """The canonical form of a FEATS string ("Number=Plur|Case=Nom" adds
        "Case=Nom|Number=Plur"), as spaCy's morphologizer normalizes labels."""
        try:
            return [normalize_morph(label)]
        except ValueError:
            raise ValueError(Errors.E019.format(
                label=label, target=self.name, expected="a FEATS string such as "
                "'Case=Nom|Number=Plur' ('_' for no features)",
            )) from None

    def accepts(self, label: str) -> bool:
        return True

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: its features ("_": none)."""
        return [] if label == Morphology.EMPTY_MORPH else label.split(Morphology.FEATURE_SEP)

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        """One gold value per predicted token: the analysis, "" where unset or
        misaligned, "!" and the analysis for a negative label."""
        values = []
        for morph in example.get_aligned("MORPH", as_string=True):
            if not morph:
                values.append("")
            elif morph.startswith("!"):
                values.append("!" + normalize_morph(morph[1:]))
            else:
                values.append(normalize_morph(morph))
        return values

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The analysis of each token ("_" for no features), "" where unset."""
        return [normalize_morph(morph) if morph else "" for morph in doc_morphs(doc)]

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        keys = [vocab.morphology.add(label) for label in labels]
        write_token_attr(docs, MORPH, keys, ids, overwrite=overwrite)


class PosMorphTarget:
    """UPOS and morphological features together, as spaCy's morphologizer
    predicts them: one label per bundle seen in training, written to
    token.pos_ and token.morph. Labels are the morphologizer's: the features
    and a "POS" feature, sorted as spaCy normalizes them
    ("Case=Nom|Number=Plur|POS=NOUN", "POS=PUNCT" for no features).

    A token whose pos or morph is unset (or misaligned, or a negative label)
    is unknown: the loss sums over every bundle there.
    """

    name = "pos+morph"
    writes = "token.pos_ and token.morph"

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        found = {
            (token.pos_, morph)
            for eg in examples
            for token, morph in zip(eg.y, doc_morphs(eg.y))
        }
        return {label for label in (self._bundle(pos, morph) for pos, morph in found) if label}

    def expand_label(self, label: str, scheme: str) -> List[str]:
        """The canonical form of a bundle ("POS=NOUN|Number=Plur" adds
        "Number=Plur|POS=NOUN"), which must have a POS feature."""
        try:
            normalized = normalize_morph(label)
        except ValueError:
            normalized = ""
        if POS_FEAT not in Morphology.feats_to_dict(normalized):
            raise ValueError(Errors.E019.format(
                label=label, target=self.name, expected="a UPOS tag and its "
                "features such as 'Case=Nom|Number=Plur|POS=NOUN' ('POS=PUNCT' "
                "for no features)",
            ))
        return [normalized]

    def accepts(self, label: str) -> bool:
        """A bundle whose POS is a UPOS tag."""
        return split_bundle(label)[0] in UPOS_TAGS

    def label_class(self, label: str) -> str:
        """The class of a label for factored transitions: its UPOS."""
        return split_bundle(label)[0]

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: "POS=NOUN" and each feature."""
        return label.split(Morphology.FEATURE_SEP)

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        poses = example.get_aligned("POS", as_string=True)
        morphs = example.get_aligned("MORPH", as_string=True)
        return [self._bundle(pos, morph) for pos, morph in zip(poses, morphs)]

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The bundle of each token, "" where its pos or morph is unset."""
        return [self._bundle(token.pos_, morph) for token, morph in zip(doc, doc_morphs(doc))]

    def _bundle(self, pos: str, morph: str) -> str:
        if not pos or not morph or pos.startswith("!") or morph.startswith("!"):
            return ""
        return morph_bundle(pos, morph)

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        bundles = [split_bundle(label) for label in labels]
        write_token_attr(docs, POS, [UPOS_IDS[pos] for pos, _ in bundles], ids, overwrite=overwrite)
        keys = [vocab.morphology.add(morph) for _, morph in bundles]
        write_token_attr(docs, MORPH, keys, ids, overwrite=overwrite)


class AllTagsTarget:
    """XPOS, UPOS and features together (UDPipe's "AllTags"): one label per
    (tag, bundle) seen in training, written to token.tag_, token.pos_ and
    token.morph. A label is the tag, a space and the morphologizer's bundle:
    "NNS Number=Plur|POS=NOUN" ("." "POS=PUNCT" gives ". POS=PUNCT"). UD
    features have no spaces, so the last space splits a label even where a
    tag has "|" (Dutch "N|soort|ev|basis|zijd|stan") or a space; a feature
    value with a space makes no valid label (E019).

    A token whose tag, pos or morph is unset (or misaligned, or a negative
    label) is unknown: the loss sums over every label there.
    """

    name = "tag+pos+morph"
    writes = "token.tag_, token.pos_ and token.morph"
    SEPARATOR = " "

    def labels_in(self, examples: Iterable[Example], scheme: str) -> Set[str]:
        found = {
            (token.tag_, token.pos_, morph)
            for eg in examples
            for token, morph in zip(eg.y, doc_morphs(eg.y))
        }
        return {label for label in (self._label(*values) for values in found) if label}

    def expand_label(self, label: str, scheme: str) -> List[str]:
        """The canonical form of a label ("NNS POS=NOUN|Number=Plur" adds
        "NNS Number=Plur|POS=NOUN"): a tag, a space and a bundle with a POS
        feature."""
        tag, sep, bundle = label.rpartition(self.SEPARATOR)
        try:
            normalized = normalize_morph(bundle) if self._is_tag(tag) and sep else ""
        except ValueError:
            normalized = ""
        if POS_FEAT not in Morphology.feats_to_dict(normalized):
            raise ValueError(Errors.E019.format(
                label=label, target=self.name, expected="a tag, a space, and a "
                "UPOS tag and its features such as 'NNS Number=Plur|POS=NOUN' "
                "('. POS=PUNCT' for no features)",
            ))
        return [f"{tag}{self.SEPARATOR}{normalized}"]

    @staticmethod
    def _is_tag(tag: str) -> bool:
        """A tag can be written: not empty, no negative "!", no space at an end."""
        return bool(tag) and not tag.startswith("!") and tag == tag.strip()

    def accepts(self, label: str) -> bool:
        """A label whose bundle's POS is a UPOS tag."""
        return self.split(label)[1] in UPOS_TAGS

    def label_class(self, label: str) -> str:
        """The class of a label for factored transitions: its UPOS."""
        return self.split(label)[1]

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: "TAG=NNS", "POS=NOUN"
        and each feature."""
        tag, _, bundle = label.rpartition(self.SEPARATOR)
        return [f"TAG={tag}"] + bundle.split(Morphology.FEATURE_SEP)

    def split(self, label: str) -> Tuple[str, str, str]:
        """("NNS", "NOUN", "Number=Plur") of "NNS Number=Plur|POS=NOUN"."""
        tag, _, bundle = label.rpartition(self.SEPARATOR)
        pos, morph = split_bundle(bundle)
        return tag, pos, morph

    def gold_values(self, example: Example, scheme: str) -> List[str]:
        values = zip(
            example.get_aligned("TAG", as_string=True),
            example.get_aligned("POS", as_string=True),
            example.get_aligned("MORPH", as_string=True),
        )
        return [self._label(tag, pos, morph) for tag, pos, morph in values]

    def predicted_values(self, doc: Doc, scheme: str) -> List[str]:
        """The label of each token, "" where its tag, pos or morph is unset."""
        return [self._label(token.tag_, token.pos_, morph) for token, morph in zip(doc, doc_morphs(doc))]

    def _label(self, tag: str, pos: str, morph: str) -> str:
        if not all((tag, pos, morph)) or any(v.startswith("!") for v in (tag, pos, morph)):
            return ""
        return f"{tag}{self.SEPARATOR}{morph_bundle(pos, morph)}"

    def write(
        self, vocab: Vocab, docs: Sequence[Doc], labels: Sequence[str],
        ids: Sequence[numpy.ndarray], *, overwrite: bool, scheme: str,
    ) -> None:
        halves = [label.rpartition(self.SEPARATOR) for label in labels]
        TARGETS["tag"].write(vocab, docs, [tag for tag, _, _ in halves], ids, overwrite=overwrite, scheme=scheme)
        TARGETS["pos+morph"].write(vocab, docs, [b for _, _, b in halves], ids, overwrite=overwrite, scheme=scheme)


Target = Union[TokenTarget, EntityTarget, JointTarget, MorphTarget, PosMorphTarget, AllTagsTarget]

TARGETS: Dict[str, Target] = {
    "tag": TokenTarget("tag", TAG, "TAG"),
    "pos": TokenTarget("pos", POS, "POS"),
    "tag+pos": JointTarget(),
    "morph": MorphTarget(),
    "pos+morph": PosMorphTarget(),
    "tag+pos+morph": AllTagsTarget(),
    "ents": EntityTarget(),
}

# spaCy's morphologizer keeps the UPOS tag in its labels as this feature
POS_FEAT = "POS"

# normalizes FEATS strings and dicts as a vocab's morphology keys them; it
# reads its string store (spaCy's symbols) and never adds to it
_MORPHOLOGY = Morphology(StringStore())


@functools.lru_cache(maxsize=100_000)
def normalize_morph(feats: str) -> str:
    """spaCy's canonical form of a FEATS string, as token.morph keys it.

    feats (str): e.g. "Number=Plur|Case=Nom"; "" or "_" for no features.
    RETURNS (str): fields and values sorted, e.g. "Case=Nom|Number=Plur";
        "_" for no features. Raises ValueError for a malformed string.
    """
    return _MORPHOLOGY.normalize_features(feats)


@functools.lru_cache(maxsize=100_000)
def morph_bundle(pos: str, morph: str) -> str:
    """The morphologizer's label of a UPOS tag and its features.

    pos (str): the UPOS tag, e.g. "NOUN".
    morph (str): a FEATS string, e.g. "Number=Plur|Case=Nom" ("_": none).
    RETURNS (str): e.g. "Case=Nom|Number=Plur|POS=NOUN".
    """
    feats = Morphology.feats_to_dict(morph)
    feats[POS_FEAT] = pos
    return _MORPHOLOGY.normalize_features(feats)


@functools.lru_cache(maxsize=100_000)
def split_bundle(label: str) -> Tuple[str, str]:
    """The UPOS tag and the features of a morphologizer label.

    label (str): e.g. "Case=Nom|Number=Plur|POS=NOUN".
    RETURNS (Tuple[str, str]): e.g. ("NOUN", "Case=Nom|Number=Plur"); the
        features are "_" for none, the tag "" if the label has none.
    """
    feats = Morphology.feats_to_dict(label)
    pos = feats.pop(POS_FEAT, "")
    return pos, _MORPHOLOGY.normalize_features(feats)


def doc_morphs(doc: Doc) -> List[str]:
    """Each token's morph as the strings of get_aligned("MORPH") are: "" where
    unset, "_" where annotated with no features."""
    return [doc.vocab.strings[key] for key in doc.to_array(MORPH).tolist()]


def label_classes(target: Target, labels: Sequence[str]) -> Optional[List[int]]:
    """The class id of each label for factored transitions (classes numbered
    in sorted order of their names), or None if the target's labels have no
    class (targets "tag", "pos", "morph", "ents")."""
    label_class = getattr(target, "label_class", None)
    if label_class is None:
        return None
    names = [label_class(label) for label in labels]
    ids = _ids_in_sorted_order(names)
    return [ids[name] for name in names]


def label_parts(target: Target, labels: Sequence[str]) -> Optional[List[List[int]]]:
    """The part ids of each label for composed emissions (parts numbered in
    sorted order of their names), or None if the target's labels have no
    parts (targets "tag", "pos", "ents")."""
    parts_of = getattr(target, "label_parts", None)
    if parts_of is None:
        return None
    names = [parts_of(label) for label in labels]
    ids = _ids_in_sorted_order(part for parts in names for part in parts)
    return [[ids[part] for part in parts] for parts in names]


def _ids_in_sorted_order(names: Iterable[str]) -> Dict[str, int]:
    """An id for each distinct name, 0, 1, ... in sorted order of the names."""
    return {name: i for i, name in enumerate(sorted(set(names)))}


def write_token_attr(
    docs: Sequence[Doc], attr: int, label_values: Sequence[int],
    ids: Sequence[numpy.ndarray], *, overwrite: bool,
) -> None:
    """Set a token attribute from label ids.

    docs (Sequence[Doc]): the docs.
    attr (int): the attribute, e.g. TAG, POS or MORPH.
    label_values (Sequence[int]): the attribute's value for each label id.
    ids (Sequence[numpy.ndarray]): per doc, a label id per token.
    overwrite (bool): replace values the docs already have (else only unset
        ones are written).
    """
    values = numpy.asarray(label_values, dtype="uint64")
    for doc, doc_ids in zip(docs, ids):
        if not len(doc):
            continue
        new = values[numpy.asarray(doc_ids, dtype="int64")]
        if not overwrite:
            old = doc.to_array(attr)
            new = numpy.where(old == 0, new, old)
        doc.from_array([attr], new.reshape(-1, 1))


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
    return biluo_tags_to_spans(doc, _as_biluo(tags, scheme))


def entity_offsets(tags: Sequence[str], scheme: str) -> List[Tuple[int, int, str]]:
    """(start, end, type) of the entities of a valid tag sequence of the
    scheme, token offsets with the end exclusive: the spans `tags_to_spans`
    makes, without a Doc."""
    return [(start, end + 1, kind) for kind, start, end in tags_to_entities(_as_biluo(tags, scheme))]


def _as_biluo(tags: Sequence[str], scheme: str) -> List[str]:
    """The BILUO tags of a valid tag sequence of the scheme."""
    if scheme in ("BILUO", "IOBES"):
        back = {v: k for k, v in _RENAME[scheme].items()}
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
_SPAN_PREFIXES = {
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
    prefixes = set(_RENAME[scheme].values())
    index: Dict[Tuple[str, str], int] = {}
    for i, label in enumerate(labels):
        if label == "O":
            continue
        prefix, sep, kind = label.partition("-")
        if not sep or not kind or prefix not in prefixes:
            raise ValueError(Errors.E013.format(label=label, scheme=scheme))
        index[(prefix, kind)] = i
    types = sorted({kind for _, kind in index})
    patterns = [
        tuple(-1 if p is None else index.get((p, kind), -1) for p in _SPAN_PREFIXES[scheme])
        for kind in types
    ]
    return types, patterns  # type: ignore[return-value]
