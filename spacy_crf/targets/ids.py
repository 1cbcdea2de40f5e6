"""Label ids: of gold values (`gold_ids`), and of the classes and parts of
labels for factored transitions and composed emissions."""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy


def label_classes(target: object, labels: Sequence[str]) -> Optional[List[int]]:
    """The class id of each label for factored transitions (classes numbered
    in sorted order of their names), or None if the target's labels have no
    class (targets "tag", "pos", "morph", "ents")."""
    label_class = getattr(target, "label_class", None)
    if label_class is None:
        return None
    names = [label_class(label) for label in labels]
    ids = _ids_in_sorted_order(names)
    return [ids[name] for name in names]


def label_parts(target: object, labels: Sequence[str]) -> Optional[List[List[int]]]:
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


def gold_ids(values: Sequence[str], labels: Sequence[str]) -> Tuple[numpy.ndarray, numpy.ndarray, List[str]]:
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


def partial_gold(
    target: Any, examples: Sequence[Any], labels: Sequence[str], gold: Sequence[numpy.ndarray]
) -> Tuple[Optional[numpy.ndarray], List[str]]:
    """Gold of tokens annotated in part (crf_morphologizer's UPOS without
    features, or features without UPOS): such a token may take every label
    that agrees with what is known, and the loss sums over those.

    target: the component's target; targets without `partial_values` have
        no partial annotation.
    examples (Sequence[Example]): the batch.
    labels (Sequence[str]): the labels, in id order (K of them).
    gold (Sequence[ndarray]): per example, the ids of `gold_ids`; a partly
        annotated token's -1 becomes K + g (modified in place).
    RETURNS: the (G, K) bool table of the label sets g (None if none), and
        the target's labels for partial annotations no label agrees with
        (the caller adds them or reports them).
    """
    partial_values = getattr(target, "partial_values", None)
    if partial_values is None:
        return None, []
    group_of: Dict[Any, int] = {}
    rows: List[numpy.ndarray] = []
    unmatched: List[str] = []
    for eg, ids in zip(examples, gold):
        for i, known in enumerate(partial_values(eg)):
            if known is None or ids[i] >= 0:
                continue
            if known not in group_of:
                row = numpy.fromiter((target.allows(known, label) for label in labels), dtype=bool, count=len(labels))
                agrees = bool(row.any())
                group_of[known] = len(rows) if agrees else -1
                if agrees:
                    rows.append(row)
                else:
                    fallback = target.fallback_label(known)
                    if fallback:
                        unmatched.append(fallback)
            if group_of[known] >= 0:
                ids[i] = len(labels) + group_of[known]
    return (numpy.stack(rows) if rows else None), unmatched
