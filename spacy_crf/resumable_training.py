"""spaCy's training loop (`spacy train`), resumable: a checkpoint at every
evaluation, and a rerun of the same command goes on from the last one.

    from spacy_crf.resumable_training import train
    train(nlp, Path("training/run"), use_gpu=-1)   # nlp from spacy.training.initialize.init_nlp

Without a checkpoint it trains as `spacy.training.loop.train` does: the same
batches in the same order, the same updates, evaluations, patience, cap, log
rows, model-last and model-best. At each evaluation it also writes
OUTPUT/checkpoint/: the weights, the optimizer's state (Adam's moments, update
counts, averages), the step, the epoch and its order of examples, every
evaluation so far (`state.json`'s "evaluations", rows as ConsoleLogger.v3
writes them: a killed run's log file may have lost its last rows), the losses and the random states of Python, NumPy and
torch, and the wall and CPU seconds the loop has run (`state.json`). A checkpoint is replaced atomically, so a kill at any moment leaves a
whole one. Resumed, the run skips the batches it has trained on, restores every
state and goes on: on the CPU it ends with the same weights, log rows and
scores as an uninterrupted run (on a GPU, cuDNN and atomics may round
otherwise). A checkpoint made with other training settings or corpora is
refused (E042).
"""

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from timeit import default_timer as timer
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple, cast

import numpy
from spacy.language import Language
from spacy.schemas import ConfigSchemaTraining
from spacy.training.example import Example
from spacy.training.loop import (
    DIR_MODEL_BEST,
    DIR_MODEL_LAST,
    create_before_to_disk_callback,
    create_evaluation_callback,
    subdivide_batch,
    update_meta,
)
from spacy.util import load_config, registry, resolve_dot_names
from thinc.api import Optimizer, constant, fix_random_seed, set_gpu_allocator
from wasabi import Printer

from .errors import Errors

CHECKPOINT = "checkpoint"


# one step's gradients of a sub-batch, in place of nlp.update:
# update(examples, drop=..., losses=..., exclude=...) with no optimizer step
UpdateStep = Callable[..., Any]


def train(
    nlp: Language,
    output_path: Path,
    *,
    use_gpu: int = -1,
    stdout: IO[str] = sys.stdout,
    stderr: IO[str] = sys.stderr,
    examples: Optional[List[Example]] = None,
    update: Optional[UpdateStep] = None,
    fingerprint_extra: str = "",
) -> Language:
    """Train `nlp` (initialized from its config, as `spacy train` does) into
    output_path, resuming from output_path/checkpoint when there is one.

    nlp (Language): the initialized pipeline with its full config.
    output_path (Path): where model-last, model-best and checkpoint/ go.
    use_gpu (int): the GPU's id, -1 for the CPU (call require_gpu first).
    examples (Optional[List[Example]]): the training examples; None reads
        the config's train corpus.
    update (Optional[UpdateStep]): the gradient step of a sub-batch,
        called as update(examples, drop=..., losses=..., exclude=...)
        without an optimizer step (the loop's finish_update follows); None:
        nlp.update (distillation passes its teacher's step).
    fingerprint_extra (str): what else a checkpoint must have been made
        with to be resumed (e.g. the teacher's fingerprint).
    RETURNS (Language): the trained pipeline (model-last's weights).
    """
    msg = Printer(no_print=True)
    config = nlp.config.interpolate()
    if config["training"]["seed"] is not None:
        fix_random_seed(config["training"]["seed"])
    allocator = config["training"]["gpu_allocator"]
    if use_gpu >= 0 and allocator:
        set_gpu_allocator(allocator)
    T = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    train_corpus, dev_corpus = resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    optimizer: Optimizer = T["optimizer"]
    before_to_disk = create_before_to_disk_callback(T["before_to_disk"])
    frozen, annotating = T["frozen_components"], T["annotating_components"]
    if T["max_epochs"] < 0:
        raise ValueError(Errors.E042.format(reason="streamed corpora (max_epochs = -1) cannot be resumed"))
    examples = list(train_corpus(nlp)) if examples is None else examples
    if not examples:
        raise ValueError(Errors.E042.format(reason="the training corpus is empty"))
    fingerprint = _fingerprint(config, len(examples), fingerprint_extra)
    checkpoint = _find_checkpoint(output_path)
    state: Dict[str, Any] = {"step": -1, "epoch": 0, "order": list(range(len(examples))), "in_epoch": 0}
    state.update(results=[], evaluations=[], losses={}, words=0, seconds=0.0, cpu_seconds=0.0, segments=0)
    if checkpoint is not None:
        state = _load_checkpoint(checkpoint, nlp, optimizer, fingerprint)
        stdout.write(msg.info(f"Resuming from {checkpoint} at step {state['step']}") + "\n")
    else:
        output_path.mkdir(parents=True, exist_ok=True)
        for name in (DIR_MODEL_LAST, DIR_MODEL_BEST):
            shutil.rmtree(output_path / name, ignore_errors=True)
    batches = _batches(examples, T["batcher"], T["max_epochs"], state)
    if checkpoint is not None:
        _set_random_states(state["random"])
    dropouts: Iterator[float] = iter(constant(T["dropout"]) if isinstance(T["dropout"], float) else T["dropout"])
    for _ in range(state["step"] + 1):  # the schedules where the run left them
        next(dropouts)
    stdout.write(msg.info(f"Pipeline: {nlp.pipe_names}") + "\n")
    stdout.write(msg.info(f"Initial learn rate: {optimizer.learn_rate}") + "\n")
    evaluate = create_evaluation_callback(nlp, dev_corpus, T["score_weights"])
    score_columns = [col for col, weight in T["score_weights"].items() if weight is not None] + ["speed"]
    with nlp.select_pipes(disable=frozen):
        log_step, finalize_logger = T["logger"](nlp, stdout, stderr)
    results: List[Tuple[float, int]] = [(float(score), int(at)) for score, at in state["results"]]
    losses: Dict[str, float] = state["losses"]
    words, started = state["words"], timer() - state["seconds"]
    cpu_started = time.process_time() - state["cpu_seconds"]
    state["segments"] += 1
    step = state["step"]

    def save(is_best: bool) -> None:
        with nlp.use_params(optimizer.averages):
            before_to_disk(nlp).to_disk(output_path / DIR_MODEL_LAST)
        if is_best:
            shutil.rmtree(output_path / DIR_MODEL_BEST, ignore_errors=True)
            shutil.copytree(output_path / DIR_MODEL_LAST, output_path / DIR_MODEL_BEST)

    if step >= 0 and _finished(step, results, T["patience"], T["max_steps"]):
        batches = iter([])  # the checkpoint is of a finished run: save it and stop
    try:
        for epoch, batch in batches:
            step += 1
            dropout = next(dropouts)
            for subbatch in subdivide_batch(batch, T["accumulate_gradient"]):
                if update is not None:
                    update(subbatch, drop=dropout, losses=losses, exclude=frozen)
                    continue
                # sgd=False: no update yet (spaCy's loop passes False where the stubs say Optimizer)
                nlp.update(
                    subbatch, drop=dropout, losses=losses, sgd=cast(Any, False), exclude=frozen, annotates=annotating
                )
            for name, proc in nlp.pipeline:
                if (
                    name not in frozen
                    and getattr(proc, "is_trainable", False)
                    and getattr(proc, "model", None) not in (True, False, None)
                ):
                    cast(Any, proc).finish_update(optimizer)
            optimizer.step_schedules()
            is_best: Optional[bool] = None
            score, other_scores = None, None
            if not step % T["eval_frequency"]:
                with nlp.use_params(optimizer.averages) if optimizer.averages else _nothing():
                    score, other_scores = evaluate()
                results.append((score, step))
                is_best = score == max(results)[0]
            words += sum(len(eg) for eg in batch)
            info = {"epoch": epoch, "step": step, "score": score, "other_scores": other_scores}
            info.update(losses=losses, checkpoints=results, seconds=int(timer() - started), words=words)
            if is_best is not None:
                with nlp.select_pipes(disable=frozen):
                    update_meta(T, nlp, info)
                save(is_best)
                info["output_path"] = str(output_path / DIR_MODEL_LAST)
            log_step(info if is_best is not None else None)
            if is_best is not None:
                # the evaluation as spaCy's ConsoleLogger.v3 writes it to its file
                scores = {
                    col: float((other_scores or {}).get(col, 0.0)) * (1 if col == "speed" else 100)
                    for col in score_columns
                }
                row = {"epoch": epoch, "step": step, "losses": dict(losses), "scores": scores, "score": score}
                state["evaluations"].append(row)
                losses = {}
                state.update(step=step, results=results, losses=losses, words=words, seconds=timer() - started)
                state["cpu_seconds"] = time.process_time() - cpu_started
                _save_checkpoint(output_path, nlp, optimizer, state, fingerprint)
            if _finished(step, results, T["patience"], T["max_steps"]):
                break
    finally:
        finalize_logger()
    save(False)
    if optimizer.averages:
        nlp.use_params(optimizer.averages)
    stdout.write(msg.good("Saved pipeline to output directory", output_path / DIR_MODEL_LAST) + "\n")
    return nlp


def budget_overrides(config_path: Path, max_steps: int) -> Dict[str, Any]:
    """The config overrides that give the config a budget of max_steps
    (none for 0): `[training] max_steps`; the learning-rate schedule's
    `total_steps` where it has one, so that a shorter (or longer) run still
    decays its learning rate to the end; and, where max_steps is not a
    multiple of `eval_frequency`, the largest divisor of max_steps below it,
    so that the last step is evaluated (model-best is never the step-0 model
    of a short run)."""
    if max_steps <= 0:
        return {}
    overrides: Dict[str, Any] = {"training.max_steps": max_steps}
    config = load_config(config_path, interpolate=False)
    learn_rate = config["training"].get("optimizer", {}).get("learn_rate")
    if isinstance(learn_rate, dict) and "total_steps" in learn_rate:
        overrides["training.optimizer.learn_rate.total_steps"] = max_steps
    eval_frequency = config["training"].get("eval_frequency", 200)  # spaCy's default
    if isinstance(eval_frequency, int) and eval_frequency > 0 and max_steps % eval_frequency:
        overrides["training.eval_frequency"] = max(d for d in range(1, eval_frequency + 1) if max_steps % d == 0)
    return overrides


def _finished(step: int, results: List[Tuple[float, int]], patience: int, max_steps: int) -> bool:
    """spaCy's stopping rule: patience steps without a new best, or the cap."""
    best_step = -max((score, -at) for score, at in results)[1] if results else 0
    return bool(patience and (step - best_step) >= patience) or bool(max_steps and step >= max_steps)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: Any) -> None:
        return None


def _batches(
    examples: List[Example],
    batcher: Callable[[List[Example]], Iterator[List[Example]]],
    max_epochs: int,
    state: Dict[str, Any],
) -> Iterator[Tuple[int, List[Example]]]:
    """spaCy's create_train_batches over a list of indices that `state`
    keeps (the epoch, its order and the batches done in it), so that a resumed
    run skips what it trained on and shuffles the next epochs as before."""
    order: List[int] = state["order"]
    skip = state["in_epoch"]
    state["in_epoch"] = 0
    epoch = state["epoch"]
    fresh = skip == 0 and state["step"] < 0
    while max_epochs < 1 or epoch != max_epochs:
        if fresh:
            random.shuffle(order)  # as spaCy shuffles its list of examples, in place, each epoch
        fresh = True
        state["epoch"] = epoch
        for i, batch in enumerate(batcher([examples[j] for j in order])):
            if i < skip:
                continue
            state["in_epoch"] = i + 1
            yield epoch, batch
        skip = 0
        state["in_epoch"] = 0
        epoch += 1
        state["epoch"] = epoch


def _fingerprint(config: Any, n_examples: int, extra: str = "") -> str:
    """What a checkpoint must share with the run that resumes it: the
    training settings (but the logger), the corpora, the pipeline's
    components and the number of training examples. A component's settings
    may change between releases (the weights must still load)."""
    import hashlib

    training = {key: value for key, value in config["training"].items() if key != "logger"}
    record = {
        "training": training,
        "corpora": config["corpora"],
        "pipeline": list(config["nlp"]["pipeline"]),
        "examples": n_examples,
        **({"extra": extra} if extra else {}),
    }
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf8")).hexdigest()


def _find_checkpoint(output_path: Path) -> Optional[Path]:
    for name in (CHECKPOINT, CHECKPOINT + ".old"):  # .old: a kill between the two renames
        path = output_path / name
        if (path / "state.json").exists():
            return path
    return None


def _parameter_keys(nlp: Language) -> Dict[Tuple[int, str], str]:
    """The optimizer's keys, (node or shim id, parameter name), by a name that
    a rebuilt pipeline shares: component, the node's place in its walk, the
    parameter."""
    keys: Dict[Tuple[int, str], str] = {}
    for pipe_name, proc in nlp.pipeline:
        model = getattr(proc, "model", None)
        if model in (None, True, False):
            continue
        for i, node in enumerate(model.walk()):
            for name in node.param_names:
                keys.setdefault((node.id, name), f"{pipe_name}/{i}/{name}")
            for j, shim in enumerate(node.shims):
                network = getattr(shim, "_model", None)
                for name, _ in getattr(network, "named_parameters", lambda: [])():
                    keys.setdefault((shim.id, name), f"{pipe_name}/{i}/shim{j}/{name}")
    return keys


_OPTIMIZER_ARRAYS = ("mom1", "mom2", "averages")
_OPTIMIZER_COUNTS = ("nr_update", "last_seen")


def _optimizer_state(optimizer: Optimizer, keys: Dict[Tuple[int, str], str]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    arrays: Dict[str, Any] = {}
    counts: Dict[str, Any] = {}
    for attr in _OPTIMIZER_ARRAYS:
        for key, value in (getattr(optimizer, attr) or {}).items():
            arrays[f"{attr}|{keys[key]}"] = _to_numpy(value)
    for attr in _OPTIMIZER_COUNTS:
        counts[attr] = {keys[key]: value for key, value in getattr(optimizer, attr).items() if key in keys}
    counts["scalars"] = {
        name: getattr(optimizer, name) for name in ("learn_rate", "b1", "b2", "eps", "L2", "grad_clip")
    }
    return arrays, counts


def _to_numpy(array: Any) -> numpy.ndarray:
    return array.get() if hasattr(array, "get") else numpy.asarray(array)


def _restore_optimizer(
    optimizer: Optimizer, keys: Dict[Tuple[int, str], str], arrays: Any, counts: Dict[str, Any], steps: int
) -> None:
    from thinc.api import get_current_ops

    by_name = {name: key for key, name in keys.items()}
    ops = get_current_ops()
    for entry in arrays.files:
        attr, name = entry.split("|", 1)
        if name not in by_name:
            raise ValueError(
                Errors.E042.format(reason=f"the checkpoint's optimizer has a parameter the pipeline lacks ({name})")
            )
        target = getattr(optimizer, attr)
        if target is None:
            raise ValueError(Errors.E042.format(reason="the checkpoint keeps parameter averages; the config does not"))
        target[by_name[name]] = ops.asarray(arrays[entry])
    for attr in _OPTIMIZER_COUNTS:
        table = getattr(optimizer, attr)
        for name, value in counts[attr].items():
            table[by_name[name]] = value
    for _ in range(steps):  # schedules are generators: the same number of steps gives the same values
        optimizer.step_schedules()
    for name, value in counts["scalars"].items():
        setattr(optimizer, name, value)


def _random_states() -> Dict[str, Any]:
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = cast(Tuple[str, numpy.ndarray, int, int, float], numpy.random.get_state())
    states: Dict[str, Any] = {"python": [version, list(internal), gauss]}
    states["numpy"] = [kind, keys.tolist(), pos, has_gauss, cached]
    torch = sys.modules.get("torch")
    if torch is not None:
        states["torch"] = torch.get_rng_state().tolist()
    return states


def _set_random_states(states: Dict[str, Any]) -> None:
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    numpy.random.set_state((kind, numpy.asarray(keys, dtype=numpy.uint32), pos, has_gauss, cached))
    if "torch" in states:
        import torch

        torch.set_rng_state(torch.tensor(states["torch"], dtype=torch.uint8))


def _save_checkpoint(
    output_path: Path, nlp: Language, optimizer: Optimizer, state: Dict[str, Any], fingerprint: str
) -> None:
    """Write OUTPUT/checkpoint whole, then swap it in (a kill leaves the old one or the new one)."""
    tmp = output_path / (CHECKPOINT + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    nlp.to_disk(tmp / "model")
    keys = _parameter_keys(nlp)
    arrays, counts = _optimizer_state(optimizer, keys)
    with (tmp / "optimizer.npz").open("wb") as file:
        numpy.savez(file, **arrays)
    record = {**state, "random": _random_states(), "optimizer": counts, "fingerprint": fingerprint}
    record["results"] = [list(r) for r in state["results"]]
    # the standard library's JSON: floats round-trip exactly (srsly's keep 10 digits)
    (tmp / "state.json").write_text(json.dumps(record), encoding="utf8")
    _sync(tmp)
    current, old = output_path / CHECKPOINT, output_path / (CHECKPOINT + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if current.exists():
        current.rename(old)
    tmp.rename(current)
    shutil.rmtree(old, ignore_errors=True)


def _sync(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            with path.open("rb") as file:
                os.fsync(file.fileno())


def _load_checkpoint(path: Path, nlp: Language, optimizer: Optimizer, fingerprint: str) -> Dict[str, Any]:
    state = json.loads((path / "state.json").read_text(encoding="utf8"))
    if state.get("fingerprint") != fingerprint:
        raise ValueError(
            Errors.E042.format(
                reason=f"{path} was made with other training settings or corpora; delete it to start anew"
            )
        )
    nlp.from_disk(path / "model")
    with numpy.load(path / "optimizer.npz") as arrays:
        _restore_optimizer(optimizer, _parameter_keys(nlp), arrays, state["optimizer"], state["step"] + 1)
    return state
