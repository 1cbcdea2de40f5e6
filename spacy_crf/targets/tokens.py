"""Targets whose labels are token attributes: "tag" (token.tag_), "pos"
(token.pos_, UPOS) and "tag+pos" (both, one label per pair seen in training).

A target says which labels the training data has, what each token's gold value
is, how predicted labels are written to the docs and how they are read back
(`predicted_values`, which calibration compares with the gold). Gold values are
strings per predicted token: a label, "" where unknown (missing or misaligned:
the loss sums over every label there) or "!LABEL" (spaCy's negative label:
LABEL is ruled out). A target whose labels combine several annotations
(crf_morphologizer's) also has `partial_values`, `allows` and `fallback_label`
for tokens annotated in part (`ids.partial_gold`); `labels_in(examples,
known)` then looks at the component's labels too. Pure Python and numpy, no
torch.
"""

from typing import Dict, Iterable, List, Sequence, Set, Tuple, Union

import numpy
from spacy.attrs import POS, TAG
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

UPOS_TAGS = sorted(tag for tag in UPOS_IDS if tag and tag.isupper() and tag != "EOL")


class TokenTarget:
    """A label per token in a token attribute: "tag" or "pos"."""

    def __init__(self, name: str, attr: int, gold_attr: str) -> None:
        self.name = name
        self.attr = attr
        self.gold_attr = gold_attr
        self.writes = f"token.{name}_"

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        """The labels of the gold tokens (negative labels name one too)."""
        attr = self.name + "_"
        found = {getattr(token, attr).lstrip("!") for eg in examples for token in eg.y}
        return {label for label in found if label}

    def expand_label(self, label: str) -> List[str]:
        """The labels that `add_label(label)` adds."""
        return [label]

    def accepts(self, label: str) -> bool:
        """Whether the label can be written (token.pos_ takes UPOS tags only)."""
        return self.attr != POS or label in UPOS_TAGS

    def gold_values(self, example: Example) -> List[str]:
        """One gold value per predicted token ("" unknown, "!L" excluded)."""
        return [value or "" for value in example.get_aligned(self.gold_attr, as_string=True)]

    def predicted_values(self, doc: Doc) -> List[str]:
        """The label each token has in the doc, "" where unset: what
        `gold_values` is compared with."""
        attr = self.name + "_"
        return [getattr(token, attr) for token in doc]

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
    ) -> None:
        """Set the predicted labels (label ids into `labels`) on the docs."""
        if self.attr == POS:
            values = [UPOS_IDS[label] for label in labels]
        else:
            values = [vocab.strings.add(label) for label in labels]
        write_token_attr(docs, self.attr, values, ids, overwrite=overwrite)


class JointTarget:
    """XPOS and UPOS together: one label per token for the pair seen in
    training, e.g. "NNS|NOUN", written to token.tag_ and token.pos_.

    A token whose tag or pos is missing (or a negative label) is unknown: the
    loss sums over every pair there.
    """

    name = "tag+pos"
    writes = "token.tag_ and token.pos_"
    SEPARATOR = "|"

    def labels_in(self, examples: Iterable[Example], known: Iterable[str] = ()) -> Set[str]:
        return {value for eg in examples for value in (self._pair(token.tag_, token.pos_) for token in eg.y) if value}

    def expand_label(self, label: str) -> List[str]:
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

    def gold_values(self, example: Example) -> List[str]:
        tags = example.get_aligned("TAG", as_string=True)
        poses = example.get_aligned("POS", as_string=True)
        return [self._pair(tag, pos) for tag, pos in zip(tags, poses)]

    def predicted_values(self, doc: Doc) -> List[str]:
        """The "TAG|UPOS" pair of each token, "" where either is unset."""
        return [self._pair(token.tag_, token.pos_) for token in doc]

    def _pair(self, tag: str, pos: str) -> str:
        if not tag or not pos or tag.startswith("!") or pos.startswith("!"):
            return ""
        return f"{tag}{self.SEPARATOR}{pos}"

    def write(
        self,
        vocab: Vocab,
        docs: Sequence[Doc],
        labels: Sequence[str],
        ids: Sequence[numpy.ndarray],
        *,
        overwrite: bool,
    ) -> None:
        pairs = [self.split(label) for label in labels]
        TAG_TARGET.write(vocab, docs, [t for t, _ in pairs], ids, overwrite=overwrite)
        POS_TARGET.write(vocab, docs, [p for _, p in pairs], ids, overwrite=overwrite)


def write_token_attr(
    docs: Sequence[Doc],
    attr: int,
    label_values: Sequence[int],
    ids: Sequence[numpy.ndarray],
    *,
    overwrite: bool,
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


TAG_TARGET = TokenTarget("tag", TAG, "TAG")
POS_TARGET = TokenTarget("pos", POS, "POS")
JOINT = JointTarget()

# crf_tagger's targets, by name
TOKEN_TARGETS: Dict[str, Union[TokenTarget, JointTarget]] = {"tag": TAG_TARGET, "pos": POS_TARGET, "tag+pos": JOINT}
