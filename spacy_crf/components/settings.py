"""The components' settings, each declared once: name, default, allowed
values and one line of description. The factories' default configs, the
components' checks (E039, when a component is built) and the settings tables
of the docs all come from these declarations."""

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Mapping, Tuple

from ..errors import Errors
from ..ml.bilstm_crf import QUANTIZE_MODES
from ..targets import ENTITY_SCHEMES, MORPH_TARGETS, SCHEMES, TOKEN_TARGETS
from ..threads import MAX_THREADS, THREADS_ALLOWED


@dataclass(frozen=True)
class Setting:
    """One setting of a component.

    name (str): its key in the config.
    default (Any): its value where the config does not set it.
    allowed (str): the values it takes, for people ("a whole number >= 0").
    check (Callable[[Any], bool]): whether a value is allowed.
    description (str): what it does, in one or two sentences.
    in_cfg (bool): held in the component's cfg (False: an attribute of the
        component, such as threads). Either way the pipeline's config.cfg
        keeps it; the component's saved cfg does not (see saving.py).
    """

    name: str
    default: Any
    allowed: str
    check: Callable[[Any], bool]
    description: str
    in_cfg: bool = True


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_of(options: Iterable[str]) -> Tuple[str, Callable[[Any], bool]]:
    options = tuple(options)
    return "one of " + ", ".join(f'"{option}"' for option in options), lambda value: value in options


def _key_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and bool(value))


# the largest window and batch_words: token counts that index arrays (int32)
MAX_TOKENS = 2**31 - 1

BOOLEAN = ("true or false", _is_bool)
WHOLE = ("a whole number >= 0", _is_whole)
TOKENS = (f"a whole number from 0 to {MAX_TOKENS:,}", lambda value: _is_whole(value) and value <= MAX_TOKENS)
COUNT_OF_THREADS = (THREADS_ALLOWED, lambda value: _is_whole(value) and value <= MAX_THREADS)
KEY = ("null or a non-empty string (a key of doc.spans)", _key_or_none)

OVERWRITE = Setting(
    "overwrite",
    False,
    *BOOLEAN,
    "Replace labels that a doc already has (else they are kept, as spaCy's tagger keeps them).",
)
WINDOW = Setting(
    "window",
    8192,
    *TOKENS,
    "Docs longer than this many tokens are tagged window by window, to bound memory; 0 never splits.",
)
BY_SENTENCE = Setting(
    "by_sentence",
    False,
    *BOOLEAN,
    "The BiLSTM and the CRF read each sentence of a doc on its own (the doc's sentences, or where "
    "spaCy's sentencizer would cut it); the tok2vec still reads the whole doc.",
)
BATCH_WORDS = Setting(
    "batch_words",
    32768,
    *TOKENS,
    "`pipe` grows each batch of `batch_size` docs by whole docs until it holds at least this many tokens "
    "(short docs tag faster in large batches); 0 keeps spaCy's batches.",
)
STORE_CONFIDENCE = Setting(
    "store_confidence",
    False,
    *BOOLEAN,
    "Write the marginal probability of each token's predicted label to token._.crf_confidence.",
)
THREADS = Setting(
    "threads",
    0,
    *COUNT_OF_THREADS,
    "CPU threads of the component's torch work; 0 (auto) is one thread unless the process chose a count "
    "(OMP_NUM_THREADS, MKL_NUM_THREADS or torch.set_num_threads); training under a transformer keeps the "
    "process's count.",
    in_cfg=False,
)
QUANTIZE = Setting(
    "quantize",
    "none",
    *_one_of(QUANTIZE_MODES),
    '"int8" predicts on the CPU with an int8 copy of the LSTM and linear layers, "bf16" with a bfloat16 '
    "copy; training, saving and the GPU use the float32 network.",
    in_cfg=False,
)
LEARN_NEW_LABELS = Setting(
    "learn_new_labels",
    False,
    *BOOLEAN,
    "Training a trained component (fine-tuning, `resume_training`) on a gold label it does not have adds "
    "the label, as `add_label` does, and learns it; false raises E003 there.",
    in_cfg=False,
)
# what every component has, after its own settings
COMMON = (OVERWRITE, WINDOW, BY_SENTENCE, BATCH_WORDS, STORE_CONFIDENCE, THREADS, QUANTIZE, LEARN_NEW_LABELS)

TAGGER_TARGET = Setting(
    "target",
    "tag",
    *_one_of(TOKEN_TARGETS),
    '"tag" writes token.tag_, "pos" token.pos_ (UPOS), "tag+pos" both, from one CRF over the (tag, pos) '
    'pairs of the training data ("NNS|NOUN").',
)
CONSTRAINTS = Setting(
    "constraints",
    "none",
    *_one_of(SCHEMES),
    'A tag scheme whose invalid transitions get probability exactly 0, for chunk tags such as "B-NP"; '
    '"none" allows every transition.',
)
TAGGER_SETTINGS: Tuple[Setting, ...] = (TAGGER_TARGET, CONSTRAINTS, *COMMON)

# 0.x's entity settings of crf_tagger (now crf_ner's): deprecated. spaCy's
# config validation refuses a key that the factory's signature lacks, so
# crf_tagger's factory still declares them for the configs and pipelines of
# 0.x and 1.0 that hold them; any but its default builds a crf_ner (W003).
TAGGER_0X_SETTINGS: Tuple[Setting, ...] = (
    Setting("store_entity_probs", False, *BOOLEAN, "Deprecated: crf_ner's store_entity_probs."),
    Setting(
        "ents_threshold",
        0.0,
        "a probability from 0 to 1",
        lambda value: _is_number(value) and 0.0 <= value <= 1.0,
        "Deprecated: crf_ner's threshold.",
    ),
    Setting("candidates_key", None, *KEY, "Deprecated: crf_ner's candidates_key."),
    Setting(
        "candidates_threshold",
        0.5,
        "a probability above 0, at most 1",
        lambda value: _is_number(value) and 0.0 < value <= 1.0,
        "Deprecated: crf_ner's candidates_threshold.",
    ),
    Setting("incorrect_spans_key", None, *KEY, "Deprecated: crf_ner's incorrect_spans_key."),
)

MORPHOLOGIZER_TARGET = Setting(
    "target",
    "pos+morph",
    *_one_of(MORPH_TARGETS),
    '"pos+morph" writes token.pos_ and token.morph from one CRF over the bundles of the training data '
    '("Case=Nom|Number=Plur|POS=NOUN", spaCy\'s morphologizer labels); "morph" token.morph only; '
    '"tag+pos+morph" token.tag_ as well, one label per (tag, bundle) (UDPipe\'s AllTags).',
)
MORPHOLOGIZER_OVERWRITE = Setting(
    "overwrite",
    True,
    *BOOLEAN,
    "Replace the POS and features a doc already has (spaCy's morphologizer's default); false writes "
    "only where they are unset.",
)
EXTEND = Setting(
    "extend",
    False,
    *BOOLEAN,
    "Merge the predicted features into those a token already has instead of replacing them: the "
    "predicted value wins where both set a feature with overwrite, the token's own without it "
    "(spaCy's morphologizer's extend).",
)
LABEL_SMOOTHING = Setting(
    "label_smoothing",
    0.0,
    "0.0 only: the CRF's loss is the likelihood of whole label sequences, with no "
    "per-token target distribution to smooth (spaCy's morphologizer's key, accepted so its configs load)",
    lambda value: _is_number(value) and value == 0.0,
    "spaCy's morphologizer's label smoothing, which a CRF has no place for.",
    in_cfg=False,
)
MORPHOLOGIZER_SETTINGS: Tuple[Setting, ...] = (
    MORPHOLOGIZER_TARGET,
    MORPHOLOGIZER_OVERWRITE,
    EXTEND,
    LABEL_SMOOTHING,
    *[setting for setting in COMMON if setting is not OVERWRITE],
)

SCHEME = Setting(
    "scheme",
    "BILUO",
    *_one_of(ENTITY_SCHEMES),
    "The tag scheme of the entities. Its invalid transitions get probability exactly 0, so every "
    "decoded path makes valid spans.",
)
INCORRECT_SPANS_KEY = Setting(
    "incorrect_spans_key",
    None,
    *KEY,
    "In training, the spans in the reference doc's doc.spans[key] are known not to be entities of "
    "their label (an annotator's rejections, as for spaCy's ner): the paths that contain one are left "
    "out of the gold sum.",
)
STORE_ENTITY_PROBS = Setting(
    "store_entity_probs",
    False,
    *BOOLEAN,
    "Write each entity's exact posterior probability (the sum over every tag path that makes exactly "
    "that span) to span._.crf_prob of doc.ents.",
)
THRESHOLD = Setting(
    "threshold",
    0.0,
    "a probability from 0 to 1",
    lambda value: _is_number(value) and 0.0 <= value <= 1.0,
    "Write only the decoded entities whose posterior is at least this (0: all of them).",
)
CANDIDATES_KEY = Setting(
    "candidates_key",
    None,
    *KEY,
    "Store every span whose posterior is at least candidates_threshold, decoded or not, as a "
    'SpanGroup in doc.spans[key] with attrs["scores"]; null: no candidates.',
)
CANDIDATES_THRESHOLD = Setting(
    "candidates_threshold",
    0.5,
    "a probability above 0, at most 1",
    lambda value: _is_number(value) and 0.0 < value <= 1.0,
    "The least posterior of a candidate span.",
)
ENTITY_RECOGNIZER_OVERWRITE = Setting(
    "overwrite",
    False,
    *BOOLEAN,
    "Replace the entities a doc already has (else only entities that overlap none of them are added).",
)
ENTITY_RECOGNIZER_SETTINGS: Tuple[Setting, ...] = (
    SCHEME,
    INCORRECT_SPANS_KEY,
    STORE_ENTITY_PROBS,
    THRESHOLD,
    CANDIDATES_KEY,
    CANDIDATES_THRESHOLD,
    ENTITY_RECOGNIZER_OVERWRITE,
    *[setting for setting in COMMON if setting is not OVERWRITE],
)


def defaults(settings: Iterable[Setting]) -> Dict[str, Any]:
    """The settings' defaults, by name: a factory's default config."""
    return {setting.name: setting.default for setting in settings}


def check_setting(setting: Setting, value: Any, name: str) -> Any:
    """The value, or ValueError E039 (which names the setting and what it
    takes) unless the setting allows it; `name` is the component's."""
    if not setting.check(value):
        raise ValueError(Errors.E039.format(name=name, setting=setting.name, value=value, allowed=setting.allowed))
    return value


def checked_cfg(settings: Iterable[Setting], values: Mapping[str, Any], name: str) -> Dict[str, Any]:
    """The values of the settings held in cfg (`in_cfg`), each checked
    (E039): a component's cfg settings, all of them and no other."""
    held = {setting.name: setting for setting in settings if setting.in_cfg}
    if set(values) != set(held):
        raise TypeError(f"component '{name}': cfg settings {sorted(values)}, expected {sorted(held)}")
    return {key: check_setting(setting, values[key], name) for key, setting in held.items()}


def documented(settings: Iterable[Setting]) -> Callable[[Callable], Callable]:
    """A decorator that adds the settings to a factory's docstring, for `help()`."""
    settings = tuple(settings)

    def add_settings(factory: Callable) -> Callable:
        lines = [
            f"    {setting.name} (default {setting.default!r}; {setting.allowed}): {setting.description}"
            for setting in settings
        ]
        factory.__doc__ = (factory.__doc__ or "").rstrip() + "\n\n    Settings:\n" + "\n".join(lines) + "\n"
        return factory

    return add_settings


def settings_table(settings: Iterable[Setting]) -> str:
    """The settings as a Markdown table (setting, default, allowed, what it
    does) for the docs; `model` and `scorer` are each page's own."""
    lines = ["| setting | default | allowed | what it does |", "|---|---|---|---|"]
    for setting in settings:
        default = json.dumps(setting.default)
        cells = [f"`{setting.name}`", f"`{default}`", setting.allowed, setting.description]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)
