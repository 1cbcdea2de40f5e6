"""benchmarks.distillation: the share of the gap closed, the commands it
runs and the table it renders from run records."""

import argparse
import json
from pathlib import Path

import pytest

from benchmarks.distillation import _train_command, gap_closed, table


def test_the_gap_closed_is_the_share_of_the_distance_to_the_teacher():
    assert gap_closed(0.97, 0.95, 0.96) == pytest.approx(0.5)
    assert gap_closed(0.97, 0.95, 0.97) == pytest.approx(1.0)
    assert gap_closed(0.97, 0.95, 0.94) == pytest.approx(-0.5)  # worse than plain
    assert gap_closed(0.95, 0.95, 0.96) is None  # no gap to close


def test_the_students_train_the_config_as_shipped_with_one_seed_and_dev_half():
    args = argparse.Namespace(
        command="plain", config=Path("configs/cpu.cfg"), work=Path("w"), seed=2, gpu_id=-1, teacher=None
    )
    plain = _train_command(args, Path("t.spacy"), Path("a.spacy"))
    assert plain[1:4] == ["-m", "scripts.train", "configs/cpu.cfg"] and "--max-steps" not in plain
    assert "--resumable" in plain and plain[-6:] == ["--paths.dev", "a.spacy", "--system.seed", "2", "--gpu-id", "-1"]
    args.command, args.teacher = "distilled", Path("teacher")
    distilled = _train_command(args, Path("t.spacy"), Path("a.spacy"))
    assert distilled[1:6] == ["-m", "spacy_crf", "distill", "teacher", "configs/cpu.cfg"]
    assert distilled[-6:] == plain[-6:]


def write(folder, name, value, counts):
    record = {"score": {"tag_acc": value, "per_doc": {"score": "tag_acc", "counts": counts}}}
    (folder / f"{name}.json").write_text(json.dumps(record))


def test_the_table_has_every_head_the_gap_and_the_paired_test(tmp_path):
    assert table(tmp_path).count("not yet") == 6  # both tasks, every head
    docs = 30
    write(tmp_path, "tag_crf_s0", 0.97, [[97, 100]] * docs)
    for seed in (0, 1):
        write(tmp_path, f"tag_plain_s{seed}", 0.95, [[95, 100]] * docs)
        write(tmp_path, f"tag_distilled_s{seed}", 0.96, [[96, 100]] * docs)
    speeds = {"words_per_second": {"crf": 900.0, "plain": 80000.0, "distilled": 79000.0}}
    (tmp_path / "speed").mkdir()
    (tmp_path / "speed" / "tag.json").write_text(json.dumps(speeds))
    text = table(tmp_path)
    assert "| teacher: all-MiniLM-L6-v2 + CRF | 0 | 97.00 | 900 | 0.01x |" in text
    assert "| student, distilled | 0, 1 | 96.00 (96.00–96.00) | 79,000 | 0.99x |" in text
    assert "closes 50% of the gap" in text
    assert "distilled minus plain, paired bootstrap over the 30 held-out docs, seeds 0, 1 pooled: +1.00" in text
    assert text.count("not yet") == 3  # the entity rows


def test_a_missing_head_says_not_yet(tmp_path):
    write(tmp_path, "ner_crf_s0", 0.7, [[7, 10]])
    (tmp_path / "ner_crf_s0.json").write_text(json.dumps({"score": {"ents_f": 0.7}}))
    text = table(tmp_path)
    assert "| student, trained on gold | – | not yet | – | – |" in text and "gap" not in text


def test_the_readme_summary_waits_for_a_whole_task(tmp_path):
    from benchmarks.distillation import summary

    assert summary(tmp_path / "none") is None  # no records: the block is left as it is
    docs = 4
    write(tmp_path, "tag_crf_s0", 0.97, [[97, 100]] * docs)
    for seed in (0, 1):
        write(tmp_path, f"tag_plain_s{seed}", 0.95, [[95, 100]] * docs)
        write(tmp_path, f"tag_distilled_s{seed}", 0.96, [[96, 100]] * docs)
    (tmp_path / "speed").mkdir()
    speeds = {"words_per_second": {"crf": 900.0, "plain": 80000.0, "distilled": 76000.0}}
    (tmp_path / "speed" / "tag.json").write_text(json.dumps(speeds))
    assert summary(tmp_path) == ""  # two seeds of each student: not yet
    write(tmp_path, "tag_plain_s2", 0.95, [[95, 100]] * docs)
    write(tmp_path, "tag_distilled_s2", 0.965, [[96, 100]] * docs)
    text = summary(tmp_path)
    assert "| XPOS tags, UD English EWT (all train docs) | 97.00 | 95.00 | 96.17 | 58% | 0.95x |" in text
    assert "entities" not in text.split("|---|")[-1]  # the task without records has no row


def test_the_probability_table_has_a_row_per_measured_head(tmp_path):
    from benchmarks.distillation import probability_table

    assert probability_table(tmp_path) is None
    folder = tmp_path / "probabilities"
    folder.mkdir()
    figures = {("crf", 0, "none"): 0.05, ("plain", 0, "none"): 0.10, ("plain", 1, "none"): 0.12}
    figures.update({("plain", 0, "entities"): 0.03, ("plain", 1, "entities"): 0.05})
    for (head, seed, objective), ece in figures.items():
        record = {"entities": {"ece": ece, "brier": 2 * ece}}
        (folder / f"ner_{head}_s{seed}_{objective}.json").write_text(json.dumps(record))
    text = probability_table(tmp_path)
    assert "| teacher: all-MiniLM-L6-v2 + CRF | 0 | 0.050 | – | 0.100 | – |" in text
    assert "| student, trained on gold | 0, 1 | 0.110 (0.100–0.120) | 0.040 (0.030–0.050) |" in text
    assert "distilled" not in text
