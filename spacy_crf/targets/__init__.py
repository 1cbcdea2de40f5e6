"""What a component's labels mean: which labels the training data has, each
token's gold value, and how predicted labels are written to the docs.

Each component picks its own targets: crf_tagger those of tokens.py ("tag",
"pos", "tag+pos"), crf_morphologizer those of morph.py ("morph", "pos+morph",
"tag+pos+morph"), crf_ner the EntityTarget of its scheme (entities.py).
"""

from typing import Union

from .entities import (
    EntityTarget,
    entity_offsets,
    entity_tags,
    span_patterns,
    tags_to_spans,
)
from .growth import GrowthPlan, growth_plan
from .ids import gold_ids, label_classes, label_parts, partial_gold
from .morph import (
    ALL_TAGS,
    MORPH_TARGET,
    MORPH_TARGETS,
    POS_MORPH,
    AllTagsTarget,
    MorphTarget,
    PosMorphTarget,
    normalize_morph,
)
from .schemes import ENTITY_SCHEMES, SCHEMES, allowed_transitions
from .tokens import (
    JOINT,
    POS_TARGET,
    TAG_TARGET,
    TOKEN_TARGETS,
    UPOS_TAGS,
    JointTarget,
    TokenTarget,
    write_token_attr,
)

Target = Union[TokenTarget, JointTarget, MorphTarget, PosMorphTarget, AllTagsTarget, EntityTarget]

__all__ = [
    "ALL_TAGS",
    "ENTITY_SCHEMES",
    "JOINT",
    "MORPH_TARGET",
    "MORPH_TARGETS",
    "TOKEN_TARGETS",
    "POS_MORPH",
    "POS_TARGET",
    "SCHEMES",
    "TAG_TARGET",
    "UPOS_TAGS",
    "AllTagsTarget",
    "EntityTarget",
    "GrowthPlan",
    "growth_plan",
    "JointTarget",
    "MorphTarget",
    "PosMorphTarget",
    "Target",
    "TokenTarget",
    "allowed_transitions",
    "entity_offsets",
    "entity_tags",
    "gold_ids",
    "label_classes",
    "label_parts",
    "normalize_morph",
    "partial_gold",
    "span_patterns",
    "tags_to_spans",
    "write_token_attr",
]
