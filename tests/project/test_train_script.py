"""scripts.train: spacy train with a step budget that keeps the schedule whole."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.train import budget_overrides

from ..helpers import write_docbin

ROOT = Path(__file__).parents[2]


def test_no_budget_keeps_the_configs_own():
    assert budget_overrides(ROOT / "configs" / "cpu.cfg", 0) == {}


def test_a_budget_sets_the_schedules_total_steps_where_there_is_one():
    assert budget_overrides(ROOT / "configs" / "cpu.cfg", 500) == {
        "training.max_steps": 500,
        "training.optimizer.learn_rate.total_steps": 500,
    }
    # spaCy's baseline has a constant learning rate: only the steps change
    assert budget_overrides(ROOT / "configs" / "baseline.cfg", 600) == {"training.max_steps": 600}


def test_a_budget_below_or_across_the_evaluations_still_evaluates_its_last_step():
    """cpu.cfg evaluates every 500 steps: 40 steps would evaluate at step 0
    only, and model-best would be the untrained model."""
    assert budget_overrides(ROOT / "configs" / "cpu.cfg", 40)["training.eval_frequency"] == 40
    assert budget_overrides(ROOT / "configs" / "cpu.cfg", 700)["training.eval_frequency"] == 350
    assert "training.eval_frequency" not in budget_overrides(ROOT / "configs" / "cpu.cfg", 1000)


@pytest.mark.slow
def test_trains_with_the_budget_and_passes_other_overrides_on(tmp_path):
    corpus = tmp_path / "train.spacy"
    write_docbin(corpus)
    output = tmp_path / "model"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.train",
            str(ROOT / "configs" / "cpu.cfg"),
            "--output",
            str(output),
            "--max-steps",
            "4",
            "--paths.train",
            str(corpus),
            "--paths.dev",
            str(corpus),
            "--training.eval_frequency",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    config = (output / "model-last" / "config.cfg").read_text()
    assert "max_steps = 4\n" in config and "total_steps = 4\n" in config and "eval_frequency = 2\n" in config
    meta = json.loads((output / "model-last" / "meta.json").read_text())
    assert "crf_tagger" in meta["pipeline"]
