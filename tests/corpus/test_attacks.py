"""The corpus job under the attacks of "nothing lost, round 2": input names
that collide, symbolic links inside OUTPUT, a killed job's unlisted shards
before --overwrite, input that changes during the run, two jobs at once."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from spacy_crf.corpus import job as job_module
from spacy_crf.corpus import outputs
from spacy_crf.corpus.outputs import MANIFEST, shard_file

from ..corpus_data import read_jsonl_rows, records, train_tagger, write_jsonl
from ..corpus_data import tag_jsonl as tag


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "tagger")


def test_inputs_whose_names_flattened_alike_write_their_own_shards(model, tmp_path):
    (tmp_path / "in" / "a").mkdir(parents=True)
    write_jsonl(tmp_path / "in" / "a" / "b.jsonl", records(3, "nested"))
    write_jsonl(tmp_path / "in" / "a__b.jsonl", records(3, "flat"))
    write_jsonl(tmp_path / "in" / "a%2Fb.jsonl", records(3, "percent"))
    summary = tag(model, tmp_path / "in", tmp_path / "out")
    ids = sorted(row["id"] for row in read_jsonl_rows(tmp_path / "out"))
    assert ids == sorted(f"{p}-{i}" for p in ("nested", "flat", "percent") for i in range(3))
    assert summary.docs == 9
    files = [json.loads(line)["file"] for line in (tmp_path / "out" / MANIFEST).read_text().splitlines()]
    assert len(set(files)) == 3
    assert shard_file("a/b.jsonl.00000", "jsonl") == "a%2Fb.jsonl.00000.jsonl"
    assert shard_file("a%2Fb.jsonl.00000", "jsonl") == "a%252Fb.jsonl.00000.jsonl"


def test_a_symlinked_bad_records_folder_is_refused_and_its_target_untouched(model, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "good.jsonl.00000.jsonl").write_text("precious\n")
    (victim / ".tmp-draft.txt").write_text("precious\n")
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "good.jsonl", records(3))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bad_records").symlink_to(victim, target_is_directory=True)
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="E120"):
            tag(model, tmp_path / "in", tmp_path / "out", overwrite=overwrite)
    assert sorted(p.name for p in victim.iterdir()) == [".tmp-draft.txt", "good.jsonl.00000.jsonl"]
    assert (victim / "good.jsonl.00000.jsonl").read_text() == "precious\n"


def test_overwrite_deletes_the_shards_a_killed_job_had_not_listed(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(12))
    tag(model, tmp_path / "in", tmp_path / "out", shard_size=3)
    # a killed job wrote shards 1-3's files but not yet their manifest lines
    manifest = (tmp_path / "out" / MANIFEST).read_text().splitlines()
    (tmp_path / "out" / MANIFEST).write_text("\n".join(manifest[:1]) + "\n")
    tag(model, tmp_path / "in", tmp_path / "out", shard_size=6, overwrite=True)
    ids = [row["id"] for row in read_jsonl_rows(tmp_path / "out")]
    assert sorted(ids) == sorted(f"doc-{i}" for i in range(12))


def test_an_input_that_shrinks_during_the_run_stops_the_job_and_loses_nothing_silently(model, tmp_path, monkeypatch):
    (tmp_path / "in").mkdir()
    path = write_jsonl(tmp_path / "in" / "part.jsonl", records(30))
    planned = job_module.plan_shards

    def plan_then_cut(*args, **kwargs):
        result = planned(*args, **kwargs)
        lines = path.read_text().splitlines(True)
        path.write_text("".join(lines[:10]))  # cut from 30 records to 10 once planned
        return result

    monkeypatch.setattr(job_module, "plan_shards", plan_then_cut)
    with pytest.raises(ValueError, match=r"E122.*part\.jsonl.*--overwrite"):
        tag(model, tmp_path / "in", tmp_path / "out")
    assert read_jsonl_rows(tmp_path / "out") == []


def test_an_input_that_grows_during_the_run_stops_the_job(model, tmp_path, monkeypatch):
    (tmp_path / "in").mkdir()
    path = write_jsonl(tmp_path / "in" / "part.jsonl", records(10))
    planned = job_module.plan_shards

    def plan_then_grow(*args, **kwargs):
        result = planned(*args, **kwargs)
        with path.open("a") as file:
            file.write(json.dumps({"id": "late", "text": "eggs"}) + "\n")
        return result

    monkeypatch.setattr(job_module, "plan_shards", plan_then_grow)
    with pytest.raises(ValueError, match="E122"):
        tag(model, tmp_path / "in", tmp_path / "out")


def test_a_second_job_into_the_same_output_is_refused_at_once(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(3))
    (tmp_path / "out").mkdir()
    with outputs.job_lock(tmp_path / "out"):
        with pytest.raises(ValueError, match="E121"):
            tag(model, tmp_path / "in", tmp_path / "out")
    assert tag(model, tmp_path / "in", tmp_path / "out").docs == 3


HOLD_LOCK = """
import sys, time
from pathlib import Path
from spacy_crf.corpus.outputs import job_lock
with job_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(600)
"""


def test_a_killed_job_leaves_no_stale_lock(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(3))
    (tmp_path / "out").mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path / "out")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match=f"E121.*{os.uname().nodename} {holder.pid}"):
            tag(model, tmp_path / "in", tmp_path / "out")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    time.sleep(0.1)
    assert tag(model, tmp_path / "in", tmp_path / "out").docs == 3


def test_line_separators_in_a_text_survive_the_round_trip(model, tmp_path):
    (tmp_path / "in").mkdir()
    texts = ["green\u2028eggs", "blue\u2029ham", "I like\u0085ham"]
    write_jsonl(tmp_path / "in" / "part.jsonl", [{"id": i, "text": t} for i, t in enumerate(texts)])
    tag(model, tmp_path / "in", tmp_path / "out")
    raw = (tmp_path / "out" / "part.jsonl.00000.jsonl").read_text(encoding="utf8")
    assert len(raw.splitlines()) == 3
    assert [json.loads(line)["id"] for line in raw.splitlines()] == [0, 1, 2]
    assert [row["id"] for row in read_jsonl_rows(tmp_path / "out")] == [0, 1, 2]


def test_leftovers_in_the_output_folder_are_swept_or_left_but_never_crash(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(3))
    (tmp_path / "out" / ".tmp-cache").mkdir(parents=True)  # a folder, not a partial file
    (tmp_path / "out" / ".tmp-part.jsonl.00000.jsonl.1234").write_text("partial")
    for _ in range(2):
        assert tag(model, tmp_path / "in", tmp_path / "out", overwrite=True).docs == 3
    assert (tmp_path / "out" / ".tmp-cache").is_dir()
    assert not (tmp_path / "out" / ".tmp-part.jsonl.00000.jsonl.1234").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_output_folder_that_cannot_be_written_is_a_coded_error(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(3))
    (tmp_path / "out").mkdir()
    (tmp_path / "out").chmod(0o500)
    try:
        with pytest.raises(ValueError, match="E118"):
            tag(model, tmp_path / "in", tmp_path / "out")
    finally:
        (tmp_path / "out").chmod(0o700)


def test_an_output_folder_the_job_may_not_write_is_a_coded_error_even_as_root(model, tmp_path, monkeypatch):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(3))
    real_open = os.open

    def refused(path, *args, **kwargs):
        if str(path).startswith(str(tmp_path / "out")):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    (tmp_path / "out").mkdir()
    monkeypatch.setattr(outputs.os, "open", refused)
    with pytest.raises(ValueError, match=r"E118.*Permission denied"):
        tag(model, tmp_path / "in", tmp_path / "out")
