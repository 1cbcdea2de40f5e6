"""The GPU benchmark scripts run (on CPU here): what they measure is right in kind."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import SENTENCES, write_docbin

ROOT = Path(__file__).parent.parent


def run(module, *args):
    """`python -m benchmarks.<module> args` from the repository root; its stdout."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", f"benchmarks.{module}", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "small.spacy"
    write_docbin(path)
    return path


def test_gpu_benchmark_smoke_test_without_a_gpu():
    out = run("gpu", "--interpret")
    assert "same paths and NLL as the torch path" in out


def test_train_steps_times_spacys_training_loop(corpus, tmp_path):
    output = tmp_path / "steps.json"
    run("train_steps", ROOT / "configs/cpu.cfg", corpus, corpus, "--steps", 8, "--warmup", 3,
        "--save", tmp_path / "model", "--profile", tmp_path / "profile.txt", "--output", output)
    result = json.loads(output.read_text())
    assert result["steps"] == 5 and result["steps_per_second"] > 0 and result["words_per_second"] > 0
    assert (tmp_path / "model" / "crf_tagger").is_dir()
    assert "spacy_crf" in (tmp_path / "profile.txt").read_text()


def test_gpu_stages_on_cpu(corpus, tmp_path):
    output = tmp_path / "stages.json"
    run("gpu_stages", corpus, "--config", ROOT / "configs/cpu.cfg", "--init-corpus", corpus,
        "--gpu-id", -1, "--repeats", 2, "--output", output)
    result = json.loads(output.read_text())
    assert set(result["ms"]) == {"tok2vec", "tok2vec + network", "decode (Viterbi)", "predict", "set_annotations"}
    assert result["n_words"] == 3 * sum(len(words) for words, _ in SENTENCES)


def test_contention_measures_every_system_in_every_condition(corpus, tmp_path):
    output = tmp_path / "contention.json"
    out = run("contention", corpus, corpus, "--init-sentences", 6, "--pipe-sentences", 6, "--batch-size", 2,
              "--updates", 1, "--warmup", 1, "--repeats", 1, "--conditions", "quiet", "busy", "--output", output)
    result = json.loads(output.read_text())
    systems = ["crf_tagger (threads = 0, auto)", "spaCy tagger"]
    assert [s for s in systems if s in result["results"]] == systems and len(result["results"]) == 3
    for workloads in result["results"].values():
        for by_kind in workloads.values():
            assert set(by_kind) == {"quiet", "busy"}
            assert all(run["median"] > 0 for run in by_kind.values())
    assert result["environment"]["logical_cpus"] >= 1
    assert "| spaCy tagger | train updates/s |" in out


def test_large_labels_times_every_operation(tmp_path):
    output = tmp_path / "large.json"
    out = run("large_labels", "--labels", 3, 5, "--batch", 2, "--length", 3, "--repeats", 1, "--output", output)
    rows = json.loads(output.read_text())["rows"]
    assert {(r["operation"], r["labels"]) for r in rows} == {
        (op, k) for op in ("viterbi", "log_z_fwd_bwd", "marginals", "nbest_5", "bilstm_forward") for k in (3, 5)
    }
    assert all(r["ms"] > 0 for r in rows)
    assert "| 5 |" in out


def test_time_to_accuracy_stamps_every_evaluation(corpus, tmp_path):
    output, image = tmp_path / "tta.json", tmp_path / "tta.png"
    run("time_to_accuracy", f"crf={ROOT / 'configs/cpu.cfg'}", f"spacy={ROOT / 'configs/baseline.cfg'}",
        "--train", corpus, "--dev", corpus, "--workdir", tmp_path / "work", "--output", output, "--plot", image,
        "--", "--training.max_steps", 4, "--training.eval_frequency", 2)
    result = json.loads(output.read_text())
    assert result["score"] == "tag_acc" and result["threads"] == 1
    for name in ("crf", "spacy"):
        points = result["runs"][name]["points"]
        assert [p["step"] for p in points] == [0, 2, 4]
        assert all(0.0 <= p["score"] <= 100.0 for p in points)
        assert [p["seconds"] for p in points] == sorted(p["seconds"] for p in points)
        assert result["runs"][name]["seconds"] >= points[-1]["seconds"]
    assert image.stat().st_size > 0


def test_time_to_accuracy_reads_the_loggers_rows():
    from benchmarks.time_to_accuracy import header_columns, parse_row, time_to

    columns = header_columns("E    #       LOSS CRF_T...  TAG_ACC  SCORE ")
    assert columns == ["E", "#", "LOSS CRF_T...", "TAG_ACC", "SCORE"]
    assert parse_row("  1     500      142616.07    85.38    0.85", columns, "tag_acc") == {"step": 500, "score": 85.38}
    assert parse_row("  1     500      142616.07    85.38    0.85", columns, "pos_acc") == {"step": 500, "score": 85.0}
    assert parse_row("✔ Saved pipeline to output directory", columns, "tag_acc") is None
    run_ = {"points": [{"seconds": 10.0, "score": 80.0}, {"seconds": 20.0, "score": 90.0}]}
    assert time_to(run_, 85.0) == 20.0 and time_to(run_, 95.0) is None
