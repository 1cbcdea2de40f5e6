"""Saving and loading of the CRF components: the cfg carries a checksum of
itself and the weights, the component's files are written atomically, and
loading is checked first and leaves the component unchanged on failure."""

import copy
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union, cast

import numpy
import srsly
from spacy import util
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..bounds import MAX_CFG_BYTES, MAX_MODEL_BYTES, Bound
from ..errors import DamagedModelError, Errors, RefusedFileError, UnsafeModelError
from ..files import FileRefused, checksum, read_regular_file, write_atomic
from ..ml import CRFBatch, first_non_finite_weight, set_constraints

if TYPE_CHECKING:
    from ..targets import Target

# What a saved cfg holds: what the component learned (its labels, its
# temperature, whether it was ever updated) and the target its labels belong to. Its settings are in the
# pipeline's config.cfg.
LEARNED_KEYS = ("labels", "target", "temperature", "trained")
# The settings that releases up to 1.0 saved in cfg too (with the names of
# 0.x): loading reads past them and keeps the values the component was built
# with (the pipeline's config, overrides included).
SETTINGS_SAVED_UP_TO_1_0 = (
    "overwrite",
    "window",
    "by_sentence",
    "batch_words",
    "store_confidence",
    "store_entity_probs",
    "threshold",
    "ents_threshold",
    "candidates_key",
    "candidates_threshold",
    "incorrect_spans_key",
    "constraints",
    "scheme",
)
# The cfg entry that holds the checksum of the saved cfg and weights.
CHECKSUM = "checksum"
# The cfg of a save in progress: written before the weights and renamed to
# "cfg" after them, so that a kill at any moment leaves a pair that loads
# (cfg with the old weights, or this file with the new ones).
PENDING_CFG = "cfg.next"
# The cfg keys that only spacy-crf 1.0 and later write, always with a checksum.
KEYS_SINCE_1_0 = ("batch_words", "by_sentence", "trained")
# Every cfg key any release has written (0.1.0's input_width included).
SAVED_KEYS = frozenset(SETTINGS_SAVED_UP_TO_1_0) | set(LEARNED_KEYS) | {"input_width", CHECKSUM}


# The temperatures a component takes: beyond them float32 scores lose the
# precision that probabilities need (at 1e-3, scores in the tens of
# thousands: marginals that contradict the Viterbi path; at 1e-20, NaN).
# `python -m spacy_crf calibrate` fits within the same range.
MIN_TEMPERATURE = 0.01
MAX_TEMPERATURE = 100.0


def checked_temperature(value: Any, name: str) -> float:
    """The temperature as a float, or ValueError E024 unless it is a real
    number (not a bool) from MIN_TEMPERATURE to MAX_TEMPERATURE."""
    if isinstance(value, bool) or not isinstance(value, (int, float, numpy.integer, numpy.floating)):
        raise ValueError(Errors.E024.format(name=name, value=value))
    if not (math.isfinite(value) and MIN_TEMPERATURE <= value <= MAX_TEMPERATURE):
        raise ValueError(Errors.E024.format(name=name, value=value))
    return float(value)


def commit_pending_cfg(path: Path) -> None:
    """The last step of a save: cfg.next becomes cfg (one rename)."""
    os.replace(path / PENDING_CFG, path / "cfg")


class SavingMixin:
    """The serialization methods of CRFComponent."""

    if TYPE_CHECKING:
        # what CRFComponent (base.py) and spaCy's TrainablePipe provide, declared for the type checker only
        TARGETS: Mapping[str, "Target"]
        name: str
        vocab: Vocab
        cfg: Dict[str, Any]
        model: Model[List[Doc], CRFBatch]

        @property
        def tags(self) -> Tuple[str, ...]: ...

        def _constraint_masks(self) -> Optional[Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]]: ...

        def _validate_serialization_attrs(self) -> None: ...

    # Serialization: the cfg carries a checksum of itself and the weights;
    # the component's files are written atomically; loading is checked first
    # and leaves the component unchanged on failure.

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize the component to a bytestring.

        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (bytes): the serialized component.
        """
        self._validate_serialization_attrs()
        cfg, model_bytes = self._saved()
        serialize = {
            "cfg": lambda: srsly.json_dumps(cfg),
            "vocab": lambda: self.vocab.to_bytes(exclude=exclude),
            "model": lambda: model_bytes,
        }
        return util.to_bytes(serialize, exclude)

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save the component to a directory, so that a kill at any moment
        leaves the old component or the new one: each file is written
        atomically, and the new cfg goes to "cfg.next" before the weights and
        is renamed to "cfg" after them (loading takes whichever cfg the
        weights match).

        path (Union[str, Path]): the directory, created if missing.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        """
        self._validate_serialization_attrs()
        path = cast(Path, util.ensure_path(path))
        path.mkdir(parents=True, exist_ok=True)
        cfg, model_bytes = self._saved()
        cfg_text = srsly.json_dumps(cfg, indent=2)
        if "vocab" not in exclude:
            self.vocab.to_disk(path / "vocab", exclude=exclude)
        if "model" in exclude:
            if "cfg" not in exclude:
                write_atomic(path / "cfg", cfg_text)
            return
        if "cfg" in exclude:
            write_atomic(path / "model", model_bytes)
            return
        write_atomic(path / PENDING_CFG, cfg_text)
        write_atomic(path / "model", model_bytes)
        commit_pending_cfg(path)

    def _saved(self) -> Tuple[Dict[str, Any], bytes]:
        """The cfg as it is saved, with the checksum of itself and the weights, and the weights."""
        model_bytes = self.model.to_bytes()
        learned = {key: self.cfg[key] for key in LEARNED_KEYS}
        cfg = srsly.json_loads(srsly.json_dumps(learned))  # as loading reads it back
        cfg[CHECKSUM] = checksum(cfg, model_bytes)
        return cfg, model_bytes

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "SavingMixin":
        """Load the component from a bytestring; on failure it is left unchanged.

        bytes_data (bytes): the data, from `to_bytes`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFComponent): the component.
        """
        self._validate_serialization_attrs()
        loaded: Dict[str, Any] = {}
        readers = {key: (lambda b, key=key: loaded.__setitem__(key, b)) for key in ("cfg", "vocab", "model")}
        try:
            util.from_bytes(bytes_data, cast(Dict[str, Callable[[bytes], Any]], readers), exclude)
            cfg = srsly.json_loads(loaded["cfg"]) if "cfg" in loaded else None
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        self._load(cfg, loaded.get("model"))
        if "vocab" in loaded:
            self.vocab.from_bytes(loaded["vocab"], exclude=exclude)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "SavingMixin":
        """Load the component from a directory; on failure it is left unchanged.

        path (Union[str, Path]): the directory, from `to_disk`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFComponent): the component.
        """
        self._validate_serialization_attrs()
        path = cast(Path, util.ensure_path(path))
        try:
            cfg = None if "cfg" in exclude else srsly.json_loads(self._read_file(path / "cfg", MAX_CFG_BYTES))
            model_bytes = None if "model" in exclude else self._read_file(path / "model", MAX_MODEL_BYTES)
        except RefusedFileError:
            raise
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        try:
            self._load(cfg, model_bytes)
        except DamagedModelError:
            # a save killed between its weights and its cfg: the weights are
            # the new ones, and so is the cfg it left in cfg.next
            pending = path / PENDING_CFG
            if cfg is None or model_bytes is None or not pending.is_file():
                raise
            try:
                pending_cfg = srsly.json_loads(self._read_file(pending, MAX_CFG_BYTES))
            except RefusedFileError:
                raise
            except Exception:
                raise ValueError(Errors.E007.format(name=self.name, reason=f"{pending} is unreadable")) from None
            if not isinstance(pending_cfg, dict) or CHECKSUM not in pending_cfg:
                raise
            self._load(pending_cfg, model_bytes)
        if "vocab" not in exclude:
            self.vocab.from_disk(path / "vocab", exclude=exclude)
        return self

    def _read_file(self, path: Path, bound: Bound) -> bytes:
        """The bytes of one of the component's files, read only where it is a
        regular file (not a device, FIFO or folder, which could be read
        forever or wait forever) of at most `bound` bytes: E047 otherwise."""
        try:
            return read_regular_file(path, bound.value())
        except FileRefused as refused:
            reason = str(refused)
            if refused.size is not None:
                reason = f"it has {refused.size:,} bytes, over the bound of {bound.value():,} {bound.name} ({bound.how_to_raise()})"
            raise RefusedFileError(Errors.E047.format(path=path, name=self.name, reason=reason)) from None

    def _load(self, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes]) -> None:
        """Check the files, apply cfg and load the weights, or change nothing
        and raise: E007 (unreadable, or not the checksum saved with them),
        E035 (an invalid cfg), E033 (non-finite weights), E008 (weights that
        do not fit the config), E017 (weights that would run code)."""
        if cfg is not None:
            if not isinstance(cfg, dict):
                raise DamagedModelError(Errors.E035.format(name=self.name, reason="it is not a JSON object"))
            cfg = dict(cfg)
            saved_checksum = cfg.pop(CHECKSUM, None)
            if saved_checksum is None:
                unknown = sorted(key for key in cfg if key not in SAVED_KEYS)
                since_1_0 = [key for key in KEYS_SINCE_1_0 if key in cfg]
                if unknown or since_1_0:
                    why = (
                        f"the unknown key {unknown[0]!r}" if unknown else f"{since_1_0[0]!r}, which 1.0 and later write"
                    )
                    reason = (
                        f'its cfg has no "{CHECKSUM}" entry but has {why}: spacy-crf 1.0 and later save a '
                        "checksum with every cfg, so the file is damaged (to change a setting on purpose, "
                        "load the pipeline, set it and save it again)"
                    )
                    raise DamagedModelError(Errors.E007.format(name=self.name, reason=reason))
            if saved_checksum is not None and model_bytes is not None:
                found = checksum(cfg, model_bytes)
                if found != saved_checksum:
                    reason = (
                        f"its cfg and weights have the checksum {found}, not the {saved_checksum} saved "
                        "with them (a damaged or edited file; to change a setting on purpose, load the "
                        "pipeline, set it and save it again)"
                    )
                    raise DamagedModelError(Errors.E007.format(name=self.name, reason=reason))
            problem = self._cfg_problem(cfg)
            if problem is not None:
                raise DamagedModelError(Errors.E035.format(name=self.name, reason=problem))
        msg = None
        if model_bytes is not None:
            try:
                msg = srsly.msgpack_loads(model_bytes)
                if not isinstance(msg, dict) or "nodes" not in msg:
                    raise ValueError("no Thinc model in the data")
            except Exception as e:
                raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        backup_cfg, backup_model = copy.deepcopy(self.cfg), self.model.to_bytes()
        try:
            if cfg is not None:
                # saved before spacy-crf had temperatures: the model's own probabilities;
                # before it saved "trained": trained (pipelines were saved after training)
                learned = {key: value for key, value in cfg.items() if key not in SETTINGS_SAVED_UP_TO_1_0}
                self.cfg.update({"temperature": 1.0, "trained": True, **learned})
                self.cfg.pop("input_width", None)  # saved by spacy-crf 0.1.0
            if msg is not None:
                self._forget_output_sizes()
                if not self.model.can_from_dict(msg, strict=False):
                    raise ValueError("the layer sizes in the file differ from the config's")
                self.model.from_dict(msg)
                n_out = self.model.get_ref("output_layer").maybe_get_dim("nO")
                if n_out is not None and n_out != len(self.tags):
                    raise ValueError(f"the file's network has {n_out} labels, the component {len(self.tags)}")
                where = first_non_finite_weight(self.model)
                if where is not None:
                    raise DamagedModelError(Errors.E033.format(name=self.name, where=where))
            set_constraints(self.model, self._constraint_masks())
        except Exception as e:
            self.cfg = backup_cfg
            self._forget_output_sizes()
            self.model.from_bytes(backup_model)
            set_constraints(self.model, self._constraint_masks())
            if isinstance(e, (UnsafeModelError, DamagedModelError, ImportError)):  # ImportError: E050, E051
                raise
            raise ValueError(Errors.E008.format(name=self.name, detail=str(e))) from e

    def _cfg_problem(self, cfg: Dict[str, Any]) -> Optional[str]:
        """What is wrong with a saved cfg (without its checksum), or None:
        its target, labels (unique strings the target can write) and
        temperature are checked."""
        target = cfg.get("target", self.cfg["target"])
        if target not in self.TARGETS:
            return f"unknown target {target!r}; expected one of {list(self.TARGETS)}"
        labels = cfg.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            return f"its labels must be a list of strings, not {labels!r:.80}"
        seen: set = set()
        for label in labels:  # one pass: a saved cfg may list tens of thousands
            if label in seen:
                return f"the label {label!r} is listed more than once"
            seen.add(label)
        unwritable = [label for label in labels if not self.TARGETS[target].accepts(label)]
        if unwritable:
            return f"target {target!r} cannot write the label {unwritable[0]!r}"
        try:
            checked_temperature(cfg.get("temperature", 1.0), self.name)
        except ValueError as e:
            return str(e)
        return None

    def _forget_output_sizes(self) -> None:
        """Unset the label count and input width of the output layer (and the
        model's output width): loading rebuilds the network to the file's sizes."""
        output_layer = self.model.get_ref("output_layer")
        for node, dim in ((output_layer, "nI"), (output_layer, "nO"), (self.model, "nO")):
            if node.has_dim(dim) is not False:
                node.set_dim(dim, None, force=True)  # type: ignore[arg-type]  # Thinc unsets a dim with None; its stub says int
