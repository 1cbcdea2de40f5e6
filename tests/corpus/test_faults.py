"""Faults that a corpus tagging job survives: records that fail anywhere in
the pipeline, a manifest that names files outside the output folder, input
that changed, damaged shards, an output folder that overlaps the input, a
killed driver, and kill -9 at random moments (real processes, on the local
engine; the ray engine's killed worker: tests/corpus/test_ray_engine.py)."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from benchmarks import corpus_faults
from spacy_crf.corpus import BadRecordError, tag_corpus
from spacy_crf.corpus.inputs import plan_shards, read_chunk
from spacy_crf.corpus.outputs import MANIFEST, read_manifest

from ..corpus_data import (
    assert_rows_match,
    read_jsonl_rows,
    records,
    reference,
    run_command_line,
    train_tagger,
    write_jsonl,
)

ENV = corpus_faults.ENV
LONG_TEXT = "eggs " * 200_001  # over spaCy's default nlp.max_length of 1,000,000


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "tagger")


def tag(model, input, output, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("output_format", "jsonl")
    return tag_corpus(model, input, output, **kwargs)


def bad_reports(output):
    """Every bad-record report in the output folder, in file order."""
    return [
        json.loads(line)
        for path in sorted((output / "bad_records").glob("*.jsonl"))
        for line in path.read_text(encoding="ascii").splitlines()
    ]


def test_records_spacy_cannot_tag_are_reported_and_the_job_goes_on(model, tmp_path):
    """A lone surrogate and a text over nlp.max_length are bad records: their
    batch-mates and the files after them are tagged, and a rerun resumes."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", records(3, "a"))
    b = [
        {"id": "b0", "text": "I like ham"},
        {"id": "b1", "text": "x \ud800"},
        {"id": "b2", "text": "Eat eggs"},
        {"id": "b3", "text": LONG_TEXT},
        {"id": "b4", "text": "eggs"},
    ]
    write_jsonl(folder / "b.jsonl", b)
    write_jsonl(folder / "c.jsonl", records(2, "c"))
    summary = tag(model, folder, tmp_path / "out")
    good = {r["id"]: r["text"] for r in records(3, "a") + records(2, "c") + [b[0], b[2], b[4]]}
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, good))
    reports = bad_reports(tmp_path / "out")
    assert [(r["id"], r["source"], r["position"], r["code"]) for r in reports] == [
        ("b1", "b.jsonl", 2, "E114"),
        ("b3", "b.jsonl", 4, "E114"),
    ]
    assert "lone surrogate" in reports[0]["message"] and "max_length" in reports[1]["message"]
    assert reports[0]["message"].startswith("[E114] Bad record in ") and "(id 'b1')" in reports[0]["message"]
    assert (summary.docs, summary.bad_records, summary.shards_written) == (8, 2, 3)
    again = tag(model, folder, tmp_path / "out")
    assert (again.shards_skipped, again.shards_written, again.docs) == (3, 0, 0)


@pytest.mark.parametrize("output_format", ["jsonl", "docbin", "parquet"])
def test_records_whose_output_cannot_be_written_are_reported(model, tmp_path, output_format):
    """An id with a lone surrogate tags but cannot be encoded: the batch is
    retried one record at a time, and only that record is lost."""
    rows = [{"id": "a", "text": "I like ham"}, {"id": "x\ud800", "text": "eggs"}, {"id": "c", "text": "Eat eggs"}]
    write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tag(model, tmp_path / "in.jsonl", tmp_path / "out", output_format=output_format)
    assert (summary.docs, summary.bad_records) == (2, 1)
    assert [(r["id"], r["position"], r["code"]) for r in bad_reports(tmp_path / "out")] == [("x\ud800", 2, "E115")]
    assert [entry["docs"] for entry in read_manifest(tmp_path / "out").values()] == [2]
    if output_format == "jsonl":
        assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {"a": "I like ham", "c": "Eat eggs"}))


def test_every_kind_of_bad_record_is_reported_once_with_its_id(model, tmp_path):
    """Surrogates, over max_length, no text field, not UTF-8, a text that is a
    number, list or null, bad JSON, JSON nested too deeply, a line over
    max_line_bytes, in JSON Lines and plain text files (one with a long and
    deep name, one whose name is not UTF-8), and a corrupt Parquet file."""
    expected = corpus_faults.make_corpus(tmp_path / "in", records=200, bad_share=0.02, seed=1)
    summary = tag(
        model,
        tmp_path / "in",
        tmp_path / "out",
        shard_size=30,
        batch_size=8,
        max_line_bytes=corpus_faults.MAX_LINE_BYTES,
    )
    counts = corpus_faults.check_output(tmp_path / "out", expected)
    assert counts["good_tagged_once"] == counts["good_expected"] == 168
    assert counts["bad_reported_once"] == counts["bad_expected"] == summary.bad_records == 33
    assert sum(n for key, n in counts.items() if not key.endswith(("_expected", "_once"))) == 0


def test_bad_records_raise_a_coded_error_when_asked(model, tmp_path):
    write_jsonl(tmp_path / "surrogate.jsonl", [{"id": "a", "text": "eggs"}, {"id": "b", "text": "x \ud800"}])
    with pytest.raises(BadRecordError, match=r"^\[E114\] Bad record in .*surrogate.jsonl, line 2: .*lone surrogate"):
        tag(model, tmp_path / "surrogate.jsonl", tmp_path / "out-1", on_error="raise")
    write_jsonl(tmp_path / "id.jsonl", [{"id": "x\ud800", "text": "eggs"}])
    with pytest.raises(
        BadRecordError, match=r"^\[E115\] Bad record in .*id.jsonl, line 1: its output cannot be written"
    ):
        tag(model, tmp_path / "id.jsonl", tmp_path / "out-2", on_error="raise")


def test_records_of_a_file_that_cannot_be_read_are_bad_records(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", records(5))
    shards, chunks = plan_shards(tmp_path / "in.jsonl", shard_size=10, batch_size=10)
    (tmp_path / "in.jsonl").unlink()
    data = read_chunk(chunks[shards[0].name][0])
    assert data.records == []
    assert [(bad["id"], bad["code"]) for bad in data.bad] == [(f"in.jsonl:{i}", "E105") for i in range(1, 6)]
    assert "cannot read the file from here on (FileNotFoundError" in data.bad[0]["message"]


def test_overwrite_deletes_no_file_outside_the_output_folder(model, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", records(4))
    out = tmp_path / "out"
    tag(model, tmp_path / "in.jsonl", out, shard_size=2)
    victims = [tmp_path / "victim.txt", tmp_path / "absolute.txt", tmp_path / "linked.txt"]
    for victim in victims:
        victim.write_text("keep me")
    (out / "link.jsonl").symlink_to(victims[2])
    with (out / MANIFEST).open("a") as file_:
        for name in ("../victim.txt", str(victims[1]), "link.jsonl"):
            file_.write(json.dumps({"shard": name, "file": name, "start": 0, "stop": 1}) + "\n")
    with pytest.warns(UserWarning, match=r"\[W101\] Not deleting") as caught:
        summary = tag(model, tmp_path / "in.jsonl", out, shard_size=2, overwrite=True)
    assert len(caught) == 3
    assert all(victim.read_text() == "keep me" for victim in victims)
    assert summary.shards_written == 2 and sorted(read_manifest(out)) == ["in.jsonl.00000", "in.jsonl.00001"]


def test_changed_input_is_refused_until_overwrite(model, tmp_path):
    """One line inserted at the top of the input: a rerun would write a record
    twice and another never."""
    rows = records(6)
    write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    tag(model, tmp_path / "in.jsonl", out, shard_size=2, max_shards=1)
    rows = [{"id": "new", "text": "Eat ham"}] + rows
    write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(ValueError, match=r"\[E116\] The input changed .*in.jsonl changed.*--overwrite"):
        tag(model, tmp_path / "in.jsonl", out, shard_size=2)
    assert len(read_jsonl_rows(out)) == 2
    tag(model, tmp_path / "in.jsonl", out, shard_size=2, overwrite=True)
    assert_rows_match(read_jsonl_rows(out), reference(model, {r["id"]: r["text"] for r in rows}))


def test_a_truncated_shard_is_tagged_again(model, tmp_path):
    rows = records(25)
    write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    tag(model, tmp_path / "in.jsonl", out, shard_size=10)
    shard = out / "in.jsonl.00001.jsonl"
    shard.write_text("".join(shard.read_text().splitlines(keepends=True)[:4]))  # 4 of 10 rows kept
    tag(model, tmp_path / "in.jsonl", out, shard_size=10)
    assert_rows_match(read_jsonl_rows(out), reference(model, {r["id"]: r["text"] for r in rows}))


def test_shards_whose_files_fail_their_check_are_tagged_again(model, tmp_path):
    """A shard of the same size with other bytes, a truncated bad-record file
    and a missing shard file are redone, not trusted."""
    rows = records(30)
    rows[25] = {"id": "doc-25", "text": 25}
    write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    tag(model, tmp_path / "in.jsonl", out, shard_size=10)
    first = out / "in.jsonl.00000.jsonl"
    first.write_bytes(first.read_bytes().replace(b'"doc-1', b'"doc-7', 1))
    (out / "in.jsonl.00001.jsonl").unlink()
    (out / "bad_records" / "in.jsonl.00002.jsonl").write_text("")
    summary = tag(model, tmp_path / "in.jsonl", out, shard_size=10)
    assert (summary.shards_redone, summary.shards_written, summary.docs) == (3, 3, 29)
    assert_rows_match(read_jsonl_rows(out), reference(model, {r["id"]: r["text"] for r in rows if r["id"] != "doc-25"}))
    assert [r["id"] for r in bad_reports(out)] == ["doc-25"]


def test_parquet_fields_whose_type_changes(model, tmp_path):
    """Within a chunk, a row that does not fit the rows before it is a bad
    record (E115); from chunk to chunk of a shard, the shard cannot be
    written (E119, a coded error)."""
    rows = [{"id": "a", "text": "eggs", "n": 1}, {"id": "b", "text": "ham", "n": "x"}]
    write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tag(model, tmp_path / "in.jsonl", tmp_path / "out", output_format="parquet", batch_size=2)
    assert summary.docs == 1 and [r["code"] for r in bad_reports(tmp_path / "out")] == ["E115"]
    with pytest.raises(ValueError, match=r"^\[E119\] Cannot write shard 'in.jsonl.00000'.*convert 'x'"):
        tag(model, tmp_path / "in.jsonl", tmp_path / "out-2", output_format="parquet", batch_size=1)


def test_an_output_folder_that_overlaps_the_input_is_refused(model, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", records(3))
    cases = [
        ("E117", folder, folder / "out", "is inside"),
        ("E117", folder, folder, "is"),
        ("E117", folder / "a.jsonl", folder / "a.jsonl", "is"),
        ("E117", folder / "a.jsonl", tmp_path, "holds"),
        ("E118", folder / "a.jsonl", tmp_path / "file.txt", "it is a file"),
        ("E118", folder / "a.jsonl", tmp_path / "file.txt" / "out", "Not a directory"),
    ]
    (tmp_path / "file.txt").write_text("not a folder")
    for code, input, output, words in cases:
        with pytest.raises(ValueError, match=rf"^\[{code}\] The output .*{words}"):
            tag(model, input, output)
    assert sorted(p.name for p in folder.iterdir()) == ["a.jsonl"]
    status, stdout, _ = run_command_line(
        ["tag", model, folder / "a.jsonl", tmp_path / "file.txt", "--no-progress"], capsys, monkeypatch
    )
    assert status == 1 and "[E118]" in stdout  # a message, no traceback


WATCHED_CHILD = """
import os, sys, time
from spacy_crf.corpus import local
sys.platform = "darwin"  # no prctl: the watchdog thread alone
driver = os.getpid()
if os.fork() == 0:
    local._die_with_parent(driver)
    open(sys.argv[1], "w").write(str(os.getpid()))
    time.sleep(600)
else:
    time.sleep(600)
"""


def test_without_prctl_a_thread_ends_the_worker_when_its_parent_dies(tmp_path):
    """The portable fallback of the worker processes (off Linux)."""
    process = subprocess.Popen([sys.executable, "-c", WATCHED_CHILD, str(tmp_path / "pid")], env=ENV)
    child = None
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.1)  # the pid written whole
        child = int((tmp_path / "pid").read_text())
        process.send_signal(signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        while corpus_faults.alive([child]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert corpus_faults.alive([child]) == []
    finally:
        process.kill()
        for pid in corpus_faults.alive([child] if child else []):
            os.kill(pid, signal.SIGKILL)


def test_kills_lose_and_double_no_record_and_leave_no_process(model, tmp_path):
    """The benchmark (benchmarks/corpus_faults.py) scaled down, on the local
    engine with two worker processes: 120 records, three of every kind of bad
    record, in 11 shards. The command is killed alone (kill -9, not its process
    group) once its workers are tagging: they end too. Then a rerun's process
    group is killed at a random moment of its work, as the benchmark does, and
    no process of it is left; then a run to the end: each record once, in the
    shards or in bad_records/. Every command costs tens of seconds of start-up
    on a busy 2-core machine, so the benchmark's first run, which only times
    the start-up and a shard, is left out (the first job times them), the
    output is killed twice in all, once each way, and the run to the end is
    the same job in this process (tag_corpus, as the command calls it)."""
    expected = corpus_faults.make_corpus(tmp_path / "input", records=120, bad_share=0.025, seed=3)
    output, log = tmp_path / "output", tmp_path / "tag.log"
    command = corpus_faults.tag_command(
        model, tmp_path / "input", output, engine="local", workers=2, shard_size=15, batch_size=8
    )
    n_shards = len(plan_shards(tmp_path / "input", shard_size=15, batch_size=8)[0])
    assert n_shards == 11

    def shards_done():
        return len((output / MANIFEST).read_text().splitlines()) if (output / MANIFEST).exists() else 0

    with log.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=log_file, env=ENV)
    workers = []
    try:
        start = time.monotonic()
        done_at = []  # when the first and the second shard were done
        while len(done_at) < 2 and process.poll() is None:
            done_at += [time.monotonic() - start] * (min(shards_done(), 2) - len(done_at))
            time.sleep(0.02)
        workers = corpus_faults.descendants(process.pid)
        assert process.poll() is None and len(workers) >= 2, log.read_text()[-3000:]  # the workers are tagging
        process.send_signal(signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 60
        while corpus_faults.alive(workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert corpus_faults.alive(workers) == []
    finally:
        process.kill()
        for pid in corpus_faults.alive(workers):
            os.kill(pid, signal.SIGKILL)

    startup, shard_seconds = done_at[0], done_at[1] - done_at[0]
    rng = random.Random(3)  # as benchmarks.corpus_faults.run: after some of the shards left, mid-shard
    before = shards_done()
    after = rng.randint(before, max(before, n_shards - 1))
    delay = rng.uniform(0.0, shard_seconds if after > before else startup + shard_seconds)
    assert corpus_faults.run_killed(command, log, output=output, after=after, delay=delay)["left"] == 0
    tag(
        model,
        tmp_path / "input",
        output,
        engine="local",
        workers=2,
        shard_size=15,
        batch_size=8,
        max_line_bytes=corpus_faults.MAX_LINE_BYTES,
    )
    counts = corpus_faults.check_output(output, expected)
    assert counts["good_tagged_once"] == counts["good_expected"] == 96
    assert counts["bad_reported_once"] == counts["bad_expected"] == 25
    assert sum(n for key, n in counts.items() if not key.endswith(("_expected", "_once"))) == 0
