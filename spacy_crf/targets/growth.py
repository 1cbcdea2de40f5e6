"""Which old label each label added after training starts from (its donor),
and how the labels' classes and parts are numbered once it is added. The
network's side (copying the donor's scores) is spacy_crf.nn.growth. Pure
Python, no torch."""

from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

from .ids import label_classes, label_parts

OUTSIDE = "O"


class GrowthPlan(NamedTuple):
    """What the network needs to add labels after its K old ones.

    donors: per new label, the id of the old label it starts from.
    classes, class_sources: factored transitions: each label's class id
        (new numbering), and per new class id the old class id it starts
        from; None otherwise.
    parts, part_sources: composed emissions: each label's part ids (new
        numbering), and per new part id its old id or -1; None otherwise.
    """

    donors: List[int]
    classes: Optional[List[int]]
    class_sources: Optional[List[int]]
    parts: Optional[List[List[int]]]
    part_sources: Optional[List[int]]


def growth_plan(target: object, old: Sequence[str], new: Sequence[str], scheme: str = "none") -> GrowthPlan:
    """The plan for adding the labels `new` after the labels `old`.

    A new label's donor is, in this order: "O" where a tag scheme is set (a
    path stays valid when a new entity's tags become "O"); the old label of
    the same class (UPOS) that shares the most parts with it; the old label
    sharing the most parts; the first old label.
    """
    labels = list(old) + list(new)
    class_of = getattr(target, "label_class", None)
    parts_of = getattr(target, "label_parts", None)
    donors = [_donor(label, old, class_of, parts_of, scheme) for label in new]
    classes = class_sources = None
    if class_of is not None:
        classes = label_classes(target, labels)
        old_ids = dict(zip(map(class_of, old), label_classes(target, old) or []))
        by_id: Dict[int, int] = {}
        assert classes is not None  # the target has classes
        for i, label in enumerate(labels):
            name = class_of(label)
            by_id.setdefault(
                classes[i], old_ids[name] if name in old_ids else old_ids[class_of(old[donors[i - len(old)]])]
            )
        class_sources = [by_id[c] for c in range(len(by_id))]
    parts = part_sources = None
    if parts_of is not None:
        parts = label_parts(target, labels)
        assert parts is not None  # the target has parts
        old_parts = label_parts(target, old) or []
        old_ids = {name: pid for label, ids in zip(old, old_parts) for name, pid in zip(parts_of(label), ids)}
        names = {pid: name for label, ids in zip(labels, parts) for name, pid in zip(parts_of(label), ids)}
        part_sources = [old_ids.get(names[p], -1) for p in range(len(names))]
    return GrowthPlan(donors, classes, class_sources, parts, part_sources)


def _donor(
    label: str,
    old: Sequence[str],
    class_of: Optional[Callable[[str], str]],
    parts_of: Optional[Callable[[str], List[str]]],
    scheme: str,
) -> int:
    if scheme != "none" and OUTSIDE in old:
        return list(old).index(OUTSIDE)
    candidates = list(range(len(old)))
    if class_of is not None:
        same = [i for i in candidates if class_of(old[i]) == class_of(label)]
        candidates = same or candidates
    if parts_of is not None:
        mine = set(parts_of(label))
        return max(candidates, key=lambda i: (len(mine & set(parts_of(old[i]))), -i))
    return candidates[0]
