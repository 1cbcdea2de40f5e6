"""spacy_crf.resumable_training: spaCy's loop with checkpoints. An
uninterrupted run trains as `spacy train` does; a run stopped at any step and
resumed ends with the same weights, log rows and best model."""

import json
from pathlib import Path

import pytest
import srsly
from spacy.training.initialize import init_nlp
from spacy.training.loop import train as spacy_train
from spacy.util import load_config

import spacy_crf.resumable_training as resumable
from spacy_crf.resumable_training import train

from ..helpers import write_docbin

ROOT = Path(__file__).parents[2]


class Stop(Exception):
    """A kill at a chosen update."""


def config_for(tmp_path, output, *, max_steps=9, eval_frequency=3, patience=0, max_epochs=0):
    corpus = tmp_path / "train.spacy"
    if not corpus.exists():
        write_docbin(corpus)
    overrides = {
        "paths.train": str(corpus),
        "paths.dev": str(corpus),
        "training.max_steps": max_steps,
        "training.max_epochs": max_epochs,
        "training.eval_frequency": eval_frequency,
        "training.patience": patience,
        "training.optimizer.learn_rate.total_steps": max_steps,
        "training.optimizer.learn_rate.warmup_steps": 2,
        "training.batcher.size": 60,  # a few batches an epoch: resumes land inside epochs and between them
        "training.logger.@loggers": "spacy.ConsoleLogger.v3",
        "training.logger.progress_bar": None,
        "training.logger.output_file": str(output / "log.jsonl"),
        "components.crf_tagger.model.hidden_width": 16,
        "components.crf_tagger.model.dropout": 0.3,  # the random states matter
    }
    return load_config(ROOT / "configs" / "cpu.cfg", overrides=overrides, interpolate=False)


def weights_of(folder):
    return {
        p.relative_to(folder): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "config.cfg"
    }


def log_rows(output):
    """The evaluations (score, losses) of every log segment, a step's last row kept."""
    rows = []
    for path in sorted(output.glob("log*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_step = {row["step"]: (row["score"], row["losses"]) for row in rows}
    return [by_step[step] for step in sorted(by_step)]


def checkpoint_rows(output):
    rows = srsly.read_json(output / "checkpoint" / "state.json")["evaluations"]
    return [(row["score"], row["losses"]) for row in rows]


def run(tmp_path, name, stop_at=None, **settings):
    output = tmp_path / name
    output.mkdir()
    config = config_for(tmp_path, output, **settings)
    if stop_at is not None:
        original = resumable.subdivide_batch
        calls = {"n": 0}

        def stopping(batch, accumulate):
            calls["n"] += 1
            if calls["n"] == stop_at:
                raise Stop
            return original(batch, accumulate)

        resumable.subdivide_batch = stopping
        try:
            with pytest.raises(Stop):
                train(init_nlp(config), output)
        finally:
            resumable.subdivide_batch = original
        (output / "log.jsonl").rename(output / "log.0.jsonl")  # spaCy's logger refuses an existing file
    train(init_nlp(config), output)
    return output


@pytest.mark.slow
def test_an_uninterrupted_run_trains_as_spacy_train_does(tmp_path):
    ours = run(tmp_path, "ours")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    spacy_train(init_nlp(config_for(tmp_path, theirs)), theirs)
    assert weights_of(ours / "model-last") == weights_of(theirs / "model-last")
    assert weights_of(ours / "model-best") == weights_of(theirs / "model-best")
    assert log_rows(ours) == log_rows(theirs)


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", [2, 5, 7, 10])
def test_a_stopped_run_resumes_to_the_same_end(tmp_path, stop_at):
    whole = run(tmp_path, "whole")
    resumed = run(tmp_path, "resumed", stop_at=stop_at)
    state = srsly.read_json(resumed / "checkpoint" / "state.json")
    assert state["segments"] == 2 and state["step"] == 9
    assert weights_of(resumed / "model-last") == weights_of(whole / "model-last")
    assert weights_of(resumed / "model-best") == weights_of(whole / "model-best")
    assert log_rows(resumed) == log_rows(whole)
    assert checkpoint_rows(resumed) == checkpoint_rows(whole)
    # the log file's rows are the checkpoint's, with srsly's 10 significant digits
    for (score, losses), (logged_score, logged_losses) in zip(checkpoint_rows(whole), log_rows(whole)):
        assert score == pytest.approx(logged_score, rel=1e-9) and losses == pytest.approx(logged_losses, rel=1e-9)


@pytest.mark.slow
def test_patience_and_the_best_score_survive_a_resume(tmp_path):
    settings = {"max_steps": 200, "eval_frequency": 2, "patience": 4}
    whole = run(tmp_path, "whole", **settings)
    steps = srsly.read_json(whole / "checkpoint" / "state.json")["step"]
    assert steps < 200  # patience stopped it
    resumed = run(tmp_path, "resumed", stop_at=steps, **settings)  # killed before its last update
    assert log_rows(resumed) == log_rows(whole)
    assert weights_of(resumed / "model-best") == weights_of(whole / "model-best")


@pytest.mark.slow
def test_a_finished_run_run_again_trains_no_further(tmp_path):
    output = run(tmp_path, "done")
    before = weights_of(output / "model-last")
    (output / "log.jsonl").rename(output / "log.0.jsonl")
    train(init_nlp(config_for(tmp_path, output)), output)
    assert weights_of(output / "model-last") == before


def test_a_checkpoint_of_another_config_is_refused(tmp_path):
    output = tmp_path / "run"
    output.mkdir()
    (output / "checkpoint").mkdir()
    srsly.write_json(output / "checkpoint" / "state.json", {"fingerprint": "another"})
    with pytest.raises(ValueError, match=r"\[E042\].*other training settings"):
        train(init_nlp(config_for(tmp_path, output, max_steps=2)), output)


def test_a_kill_between_the_renames_leaves_the_old_checkpoint_found(tmp_path):
    (tmp_path / "checkpoint.old").mkdir()
    (tmp_path / "checkpoint.old" / "state.json").write_text("{}")
    assert resumable._find_checkpoint(tmp_path) == tmp_path / "checkpoint.old"
    (tmp_path / "checkpoint.tmp").mkdir()  # half-written: never read
    assert resumable._find_checkpoint(tmp_path) == tmp_path / "checkpoint.old"


def test_the_fingerprint_is_of_the_training_settings_and_corpora(tmp_path):
    base = config_for(tmp_path, tmp_path).interpolate()
    same = resumable._fingerprint(base, 18)
    changed = config_for(tmp_path, tmp_path).interpolate()
    changed["components"]["crf_tagger"]["store_confidence"] = True  # a component setting: the weights still load
    changed["training"]["logger"]["progress_bar"] = True
    assert resumable._fingerprint(changed, 18) == same
    changed["training"]["max_steps"] = 10
    assert resumable._fingerprint(changed, 18) != same
    assert resumable._fingerprint(base, 19) != same and resumable._fingerprint(base, 18, "teacher") != same
