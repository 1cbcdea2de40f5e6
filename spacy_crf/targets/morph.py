"""Targets of morphology: "morph" (token.morph, UD features), "pos+morph"
(token.pos_ and token.morph, one label per bundle, labelled as spaCy's
morphologizer labels them) and "tag+pos+morph" (token.tag_ as well: UDPipe's
AllTags). See tokens.py for what a target is. Pure Python and numpy, no torch.
"""

import functools
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import numpy
from spacy.attrs import MORPH, POS
from spacy.morphology import Morphology
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.strings import StringStore
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors
from ..typed_api import set_morph
from .tokens import TAG_TARGET, UPOS_TAGS, write_token_attr


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

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        """The analyses of the gold tokens (negative labels name one too)."""
        found = {morph.lstrip("!") for eg in examples for morph in doc_morphs(eg.y)}
        return {normalize_morph(morph) for morph in found if morph}

    def expand_label(self, label: str) -> List[str]:
        """The canonical form of a FEATS string ("Number=Plur|Case=Nom" adds
        "Case=Nom|Number=Plur"), as spaCy's morphologizer normalizes labels."""
        try:
            return [normalize_morph(label)]
        except ValueError:
            raise ValueError(
                Errors.E019.format(
                    label=label,
                    target=self.name,
                    expected="a FEATS string such as 'Case=Nom|Number=Plur' ('_' for no features)",
                )
            ) from None

    def accepts(self, label: str) -> bool:
        return True

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: its features ("_": none)."""
        return [] if label == Morphology.EMPTY_MORPH else label.split(Morphology.FEATURE_SEP)

    def gold_values(self, example: Example) -> List[str]:
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

    def predicted_values(self, doc: Doc) -> List[str]:
        """The analysis of each token ("_" for no features), "" where unset."""
        return [normalize_morph(morph) if morph else "" for morph in doc_morphs(doc)]

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
        extend: bool = False,
    ) -> None:
        write_morph(vocab, docs, labels, ids, overwrite=overwrite, extend=extend)


class PosMorphTarget:
    """UPOS and morphological features together, as spaCy's morphologizer
    predicts them: one label per bundle seen in training, written to
    token.pos_ and token.morph. Labels are the morphologizer's: the features
    and a "POS" feature, sorted as spaCy normalizes them
    ("Case=Nom|Number=Plur|POS=NOUN", "POS=PUNCT" for no features; a label
    without "POS" writes features only, as spaCy's does).

    A token annotated with a UPOS but no features, or features but no UPOS,
    may take every bundle that agrees with the known half (the loss sums over
    them); a token with neither (or misaligned, or a negative label) is
    unknown: the loss sums over every bundle there.
    """

    name = "pos+morph"
    writes = "token.pos_ and token.morph"

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        """The bundles of the fully annotated tokens, and spaCy's label for
        each half-annotated token that none of those or `known` agrees with
        ("POS=NOUN" for a UPOS alone, "Case=Nom" for features alone)."""
        complete, halves = set(), set()
        for eg in examples:
            for token, morph in zip(eg.y, doc_morphs(eg.y)):
                label = self._bundle(token.pos_, morph)
                if label:
                    complete.add(label)
                else:
                    half = self._half(token.pos_, morph)
                    if half is not None:
                        halves.add(half)
        return complete | unmatched_fallbacks(self, halves, complete | set(known))

    def expand_label(self, label: str) -> List[str]:
        """The canonical form of a bundle ("POS=NOUN|Number=Plur" adds
        "Number=Plur|POS=NOUN"); features without "POS" are a label too, as
        in spaCy's morphologizer ("Feat=A")."""
        try:
            return [normalize_morph(label)]
        except ValueError:
            raise ValueError(
                Errors.E019.format(
                    label=label,
                    target=self.name,
                    expected="a UPOS tag and its "
                    "features such as 'Case=Nom|Number=Plur|POS=NOUN' ('POS=PUNCT' "
                    "for no features), or features alone",
                )
            ) from None

    def accepts(self, label: str) -> bool:
        """A bundle whose POS is a UPOS tag, or features without a POS."""
        pos = split_bundle(label)[0]
        return not pos or pos in UPOS_TAGS

    def label_class(self, label: str) -> str:
        """The class of a label for factored transitions: its UPOS."""
        return split_bundle(label)[0]

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label for composed emissions: "POS=NOUN" and each feature."""
        return label.split(Morphology.FEATURE_SEP)

    def gold_values(self, example: Example) -> List[str]:
        poses = example.get_aligned("POS", as_string=True)
        morphs = example.get_aligned("MORPH", as_string=True)
        return [self._bundle(pos, morph) for pos, morph in zip(poses, morphs)]

    def partial_values(self, example: Example) -> List[Optional[Tuple[str, str]]]:
        """Per predicted token, the known half of a half-annotated one:
        (UPOS, "") or ("", features); None where fully annotated or not at all."""
        poses = example.get_aligned("POS", as_string=True)
        morphs = example.get_aligned("MORPH", as_string=True)
        return [self._half(pos, morph) for pos, morph in zip(poses, morphs)]

    def allows(self, half: Tuple[str, str], label: str) -> bool:
        """Whether a label agrees with the known half of an annotation."""
        pos, morph = split_bundle(label)
        return (not half[0] or half[0] == pos) and (not half[1] or half[1] == morph)

    def fallback_label(self, half: Tuple[str, str]) -> Optional[str]:
        """spaCy's morphologizer's label for a half annotation: "POS=NOUN"
        for a UPOS alone, the features alone ("Case=Nom") for features."""
        pos, morph = half
        return morph_bundle(pos, "_") if pos else morph

    def predicted_values(self, doc: Doc) -> List[str]:
        """The bundle of each token, "" where its pos or morph is unset."""
        return [self._bundle(token.pos_, morph) for token, morph in zip(doc, doc_morphs(doc))]

    def _bundle(self, pos: str, morph: str) -> str:
        if not pos or not morph or pos.startswith("!") or morph.startswith("!"):
            return ""
        return morph_bundle(pos, morph)

    @staticmethod
    def _half(pos: Optional[str], morph: Optional[str]) -> Optional[Tuple[str, str]]:
        pos, morph = known_value(pos), known_value(morph)
        if bool(pos) == bool(morph):
            return None
        return (pos, normalize_morph(morph) if morph else "")

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
        extend: bool = False,
    ) -> None:
        bundles = [split_bundle(label) for label in labels]
        write_token_attr(docs, POS, [UPOS_IDS[pos] for pos, _ in bundles], ids, overwrite=overwrite)
        write_morph(vocab, docs, [morph for _, morph in bundles], ids, overwrite=overwrite, extend=extend)


def known_value(value: Optional[str]) -> str:
    """An aligned gold value ("" where unset, misaligned or a negative label)."""
    return "" if not value or value.startswith("!") else value


def unmatched_fallbacks(target: Any, halves: Iterable[Tuple[str, ...]], labels: Set[str]) -> Set[str]:
    """The target's labels for the partial annotations no label agrees with."""
    found = set()
    for half in halves:
        if not any(target.allows(half, label) for label in labels):
            fallback = target.fallback_label(half)
            if fallback:
                found.add(fallback)
    return found


class AllTagsTarget:
    """XPOS, UPOS and features together (UDPipe's "AllTags"): one label per
    (tag, bundle) seen in training, written to token.tag_, token.pos_ and
    token.morph. A label is the tag, a space and the morphologizer's bundle:
    "NNS Number=Plur|POS=NOUN" ("." "POS=PUNCT" gives ". POS=PUNCT"). UD
    features have no spaces, so the last space splits a label even where a
    tag has "|" (Dutch "N|soort|ev|basis|zijd|stan") or a space; a feature
    value with a space makes no valid label (E019).

    A token annotated with some of tag, UPOS and features may take every
    label that agrees with those (the loss sums over them); a token with none
    (or misaligned, or negative labels) is unknown: the loss sums over every
    label there.
    """

    name = "tag+pos+morph"
    writes = "token.tag_, token.pos_ and token.morph"
    SEPARATOR = " "

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        """The labels of the fully annotated tokens, and for a token with a
        tag and UPOS but no features that none of those or `known` agrees
        with, its label without features."""
        found = {(token.tag_, token.pos_, morph) for eg in examples for token, morph in zip(eg.y, doc_morphs(eg.y))}
        complete = {label for label in (self._label(*values) for values in found) if label}
        partial = {p for p in (self._partial(*values) for values in found) if p is not None}
        return complete | unmatched_fallbacks(self, partial, complete | set(known))

    def expand_label(self, label: str) -> List[str]:
        """The canonical form of a label ("NNS POS=NOUN|Number=Plur" adds
        "NNS Number=Plur|POS=NOUN"): a tag, a space and a bundle with a POS
        feature."""
        tag, sep, bundle = label.rpartition(self.SEPARATOR)
        try:
            normalized = normalize_morph(bundle) if self._is_tag(tag) and sep else ""
        except ValueError:
            normalized = ""
        if POS_FEAT not in Morphology.feats_to_dict(normalized):
            raise ValueError(
                Errors.E019.format(
                    label=label,
                    target=self.name,
                    expected="a tag, a space, and a "
                    "UPOS tag and its features such as 'NNS Number=Plur|POS=NOUN' "
                    "('. POS=PUNCT' for no features)",
                )
            )
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

    def gold_values(self, example: Example) -> List[str]:
        values = zip(
            example.get_aligned("TAG", as_string=True),
            example.get_aligned("POS", as_string=True),
            example.get_aligned("MORPH", as_string=True),
        )
        return [self._label(tag, pos, morph) for tag, pos, morph in values]

    def partial_values(self, example: Example) -> List[Optional[Tuple[str, str, str]]]:
        """Per predicted token, what is known of a partly annotated one: (tag,
        UPOS, features), "" for each unknown; None where fully annotated or
        not at all."""
        values = zip(
            example.get_aligned("TAG", as_string=True),
            example.get_aligned("POS", as_string=True),
            example.get_aligned("MORPH", as_string=True),
        )
        return [self._partial(tag, pos, morph) for tag, pos, morph in values]

    def allows(self, partial: Tuple[str, str, str], label: str) -> bool:
        """Whether a label agrees with the known parts of an annotation."""
        return all(not want or want == have for want, have in zip(partial, self.split(label)))

    def fallback_label(self, partial: Tuple[str, str, str]) -> Optional[str]:
        """The label of a tag and UPOS without features; None for other
        partial annotations (no label can be made of them)."""
        tag, pos, morph = partial
        return f"{tag}{self.SEPARATOR}{morph_bundle(pos, morph or '_')}" if tag and pos and self._is_tag(tag) else None

    @staticmethod
    def _partial(tag: Optional[str], pos: Optional[str], morph: Optional[str]) -> Optional[Tuple[str, str, str]]:
        tag, pos, morph = known_value(tag), known_value(pos), known_value(morph)
        if all((tag, pos, morph)) or not any((tag, pos, morph)):
            return None
        return (tag, pos, normalize_morph(morph) if morph else "")

    def predicted_values(self, doc: Doc) -> List[str]:
        """The label of each token, "" where its tag, pos or morph is unset."""
        return [self._label(token.tag_, token.pos_, morph) for token, morph in zip(doc, doc_morphs(doc))]

    def _label(self, tag: str, pos: str, morph: str) -> str:
        if not all((tag, pos, morph)) or any(v.startswith("!") for v in (tag, pos, morph)):
            return ""
        return f"{tag}{self.SEPARATOR}{morph_bundle(pos, morph)}"

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
        extend: bool = False,
    ) -> None:
        halves = [label.rpartition(self.SEPARATOR) for label in labels]
        TAG_TARGET.write(vocab, docs, [tag for tag, _, _ in halves], ids, overwrite=overwrite)
        POS_MORPH.write(vocab, docs, [b for _, _, b in halves], ids, overwrite=overwrite, extend=extend)


def write_morph(
    vocab: Vocab,
    docs: Sequence[Doc],
    morphs: Sequence[str],
    ids: Sequence[numpy.ndarray],
    *,
    overwrite: bool,
    extend: bool,
) -> None:
    """Set token.morph from label ids (`morphs`: each label's features), as
    spaCy's morphologizer sets it: without extend, replace (overwrite) or
    fill only unset analyses; with extend, merge the predicted features into
    the token's, the predicted value winning where both set a feature with
    overwrite and the token's own without it."""
    keys = [vocab.morphology.add(morph) for morph in morphs]
    if not extend:
        write_token_attr(docs, MORPH, keys, ids, overwrite=overwrite)
        return
    predicted = [Morphology.feats_to_dict(morph) if morph and morph != "_" else {} for morph in morphs]
    for doc, doc_ids in zip(docs, ids):
        for token, label_id in zip(doc, doc_ids.tolist()):
            own = token.morph.to_dict()
            merged = {**own, **predicted[label_id]} if overwrite else {**predicted[label_id], **own}
            set_morph(token, vocab.morphology.add(merged) if merged else 0)


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
    return str(_MORPHOLOGY.normalize_features(feats))


@functools.lru_cache(maxsize=100_000)
def morph_bundle(pos: str, morph: str) -> str:
    """The morphologizer's label of a UPOS tag and its features.

    pos (str): the UPOS tag, e.g. "NOUN".
    morph (str): a FEATS string, e.g. "Number=Plur|Case=Nom" ("_": none).
    RETURNS (str): e.g. "Case=Nom|Number=Plur|POS=NOUN".
    """
    feats = Morphology.feats_to_dict(morph)
    feats[POS_FEAT] = pos
    return str(_MORPHOLOGY.normalize_features(feats))


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


MORPH_TARGET = MorphTarget()
POS_MORPH = PosMorphTarget()
ALL_TAGS = AllTagsTarget()

# crf_morphologizer's targets, by name
MORPH_TARGETS: Dict[str, Union[MorphTarget, PosMorphTarget, AllTagsTarget]] = {
    "pos+morph": POS_MORPH,
    "morph": MORPH_TARGET,
    "tag+pos+morph": ALL_TAGS,
}
