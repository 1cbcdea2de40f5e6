"""The corpus job under the attacks of "bounded, round 3": files it locks or
writes cannot reach outside OUTPUT, every input change it can see is seen,
every size an input controls is bounded before memory is spent, and a bad
file is a reported file, never a failed job."""

import dataclasses
import io
import json
import os
import tracemalloc

import pytest

from spacy_crf.corpus import job as job_module
from spacy_crf.corpus.inputs import ReadOptions, plan_shards, read_chunk
from spacy_crf.corpus.outputs import MANIFEST, job_lock, shard_file

from ..corpus_data import read_jsonl_rows, records, train_tagger, write_jsonl, write_parquet
from ..corpus_data import run_command_line as run
from ..corpus_data import tag_jsonl as tag


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "tagger")


def bad_reports(output):
    return [
        json.loads(line)
        for path in sorted((output / "bad_records").glob("*.jsonl"))
        for line in path.read_text(encoding="ascii").splitlines()
    ]


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", records(3))
    return tmp_path / "in"


# 1. the lock file


def test_a_hard_linked_lock_file_is_refused_and_its_other_name_untouched(model, corpus, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("PRECIOUS\n")
    (tmp_path / "out").mkdir()
    os.link(victim, tmp_path / "out" / ".lock")
    with pytest.raises(ValueError, match=r"E124.*\.lock.*2 names"):
        tag(model, corpus, tmp_path / "out")
    assert victim.read_text() == "PRECIOUS\n"


def test_a_fifo_or_folder_at_the_lock_is_a_coded_error_without_waiting(tmp_path):
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / ".lock")
    (tmp_path / "folder" / ".lock").mkdir(parents=True)
    for output in (tmp_path / "fifo", tmp_path / "folder"):
        with pytest.raises(ValueError, match="E124.*not a regular file"):
            with job_lock(output):
                pass


# 3. inputs replaced during the run


def _replace_once_planned(monkeypatch, path, content, *, rename):
    planned = job_module.plan_shards

    def plan_then_replace(*args, **kwargs):
        result = planned(*args, **kwargs)
        stat = os.stat(path)
        if rename:  # as rsync -a: a new file renamed over the old
            (path.parent / ".new").write_bytes(content)
            os.replace(path.parent / ".new", path)
        else:  # as cp -p: the same file rewritten
            path.write_bytes(content)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return result

    monkeypatch.setattr(job_module, "plan_shards", plan_then_replace)


@pytest.mark.parametrize("rename", [False, True], ids=["in_place", "renamed"])
def test_same_size_content_with_its_mtime_kept_is_seen(model, tmp_path, monkeypatch, rename):
    (tmp_path / "in").mkdir()
    path = write_jsonl(tmp_path / "in" / "a.jsonl", records(4))
    content = path.read_bytes().replace(b"doc-", b"DOC-")
    assert len(content) == path.stat().st_size
    _replace_once_planned(monkeypatch, path, content, rename=rename)
    with pytest.raises(ValueError, match="E122"):
        tag(model, tmp_path / "in", tmp_path / "out")
    assert read_jsonl_rows(tmp_path / "out") == []


def test_content_that_differs_from_its_planned_checksum_is_seen(model, corpus, tmp_path, monkeypatch):
    """A change between hashing and the stat that no stat field shows: the
    checksum at the file's last shard sees it."""
    planned = job_module.plan_shards

    def plan_with_another_checksum(*args, **kwargs):
        shards, chunks = planned(*args, **kwargs)
        other = {shard.name: dataclasses.replace(shard, sha256="0" * 64) for shard in shards}
        return list(other.values()), {
            name: [dataclasses.replace(chunk, shard=other[name]) for chunk in shard_chunks]
            for name, shard_chunks in chunks.items()
        }

    monkeypatch.setattr(job_module, "plan_shards", plan_with_another_checksum)
    with pytest.raises(ValueError, match="E122.*sha256"):
        tag(model, corpus, tmp_path / "out")


# 4. deep JSON


def test_a_deeply_nested_line_costs_no_other_line(model, tmp_path):
    (tmp_path / "in").mkdir()
    rows = [json.dumps(row) for row in records(4)]
    rows.insert(1, "[" * 100_000)
    rows.insert(2, '{"id": "deep", "text": "x", "f": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "in" / "a.jsonl").write_text("\n".join(rows) + "\n")
    summary = tag(model, tmp_path / "in", tmp_path / "out")
    assert sorted(row["id"] for row in read_jsonl_rows(tmp_path / "out")) == [f"doc-{i}" for i in range(4)]
    assert [(bad["position"], bad["code"]) for bad in bad_reports(tmp_path / "out")] == [(2, "E105"), (3, "E105")]
    assert "nested" in bad_reports(tmp_path / "out")[0]["message"]
    assert summary.bad_records == 2


# 7. Parquet row groups read once


class _CountingFile(io.RawIOBase):
    def __init__(self, path, counter):
        self.file = open(path, "rb")
        self.counter = counter

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self.file.seek(offset, whence)

    def tell(self):
        return self.file.tell()

    def readinto(self, buffer):
        n = self.file.readinto(buffer)
        self.counter[0] += n or 0
        return n

    def close(self):
        self.file.close()
        super().close()


def test_parquet_chunks_of_a_large_row_group_read_it_about_once(tmp_path, monkeypatch):
    import pyarrow.parquet

    rows = [{"id": i, "text": f"text number {i} " * 5} for i in range(3000)]
    path = write_parquet(tmp_path / "big.parquet", rows, row_group_size=3000)
    shards, chunks = plan_shards(path, shard_size=3000, batch_size=30)
    read = [0]
    opened = pyarrow.parquet.ParquetFile
    monkeypatch.setattr(
        pyarrow.parquet, "ParquetFile", lambda source, *a, **k: opened(_CountingFile(source, read), *a, **k)
    )
    got = [record["id"] for chunk in chunks[shards[0].name] for record in read_chunk(chunk).records]
    assert got == list(range(3000))
    assert read[0] < 4 * path.stat().st_size  # reading the group per chunk: 100 times


# 9. long lines


def test_a_line_over_max_line_bytes_is_a_bad_record_read_in_bounded_memory(tmp_path):
    path = tmp_path / "a.jsonl"
    long_line = json.dumps({"id": "long", "text": "eggs " * 4_000_000})  # 20 MB
    path.write_text(
        json.dumps({"id": "a", "text": "ham"}) + "\n" + long_line + "\n" + json.dumps({"id": "b", "text": "x"})
    )
    shards, chunks = plan_shards(path, shard_size=10, batch_size=10)
    tracemalloc.start()
    data = read_chunk(chunks[shards[0].name][0], options=ReadOptions(max_line_bytes=1 << 20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [record["id"] for record in data.records] == ["a", "b"]
    assert [bad["position"] for bad in data.bad] == [2]
    assert "1,048,576 bytes" in data.bad[0]["message"] and "--max-line-bytes" in data.bad[0]["message"]
    assert peak < 8 << 20


def test_max_line_bytes_is_an_option_of_the_job(model, tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": "a", "text": "eggs " * 100}, {"id": "b", "text": "ham"}])
    summary = tag(model, tmp_path / "in", tmp_path / "out", max_line_bytes=200)
    assert summary.docs == 1 and summary.bad_records == 1
    with pytest.raises(ValueError, match="E111.*max_line_bytes"):
        tag(model, tmp_path / "in", tmp_path / "out2", max_line_bytes=0)


# 11. tracebacks from tag


@pytest.mark.parametrize(
    "option", [("--shard-size", "9223372036854775808"), ("--batch-size", str(2**63)), ("--max-shards", "-1")]
)
def test_sizes_out_of_range_are_coded_errors(model, corpus, tmp_path, capsys, monkeypatch, option):
    code, out, err = run(["tag", model, corpus, tmp_path / "out", "--no-progress", *option], capsys, monkeypatch)
    assert code == 1
    assert "E111" in out + err or "E125" in out + err


def test_a_manifest_line_naming_a_folder_is_left_alone_by_overwrite(model, corpus, tmp_path):
    out = tmp_path / "out"
    tag(model, corpus, out)
    (out / "folder").mkdir()
    with (out / MANIFEST).open("a") as file_:
        file_.write(json.dumps({"shard": "x", "file": "folder", "start": 0, "stop": 1}) + "\n")
    with pytest.warns(UserWarning, match="W102.*folder"):
        summary = tag(model, corpus, out, overwrite=True)
    assert summary.docs == 3 and (out / "folder").is_dir()


@pytest.mark.parametrize("suffix", [".parquet", ".spacy"])
def test_a_corrupt_file_among_good_ones_is_a_reported_file(model, corpus, tmp_path, suffix):
    (corpus / f"corrupt{suffix}").write_bytes(b"PAR1 this is not what it says" * 10)
    summary = tag(model, corpus, tmp_path / "out")
    assert summary.docs == 3
    reports = bad_reports(tmp_path / "out")
    assert [(bad["source"], bad["code"]) for bad in reports] == [(f"corrupt{suffix}", "E105")]
    assert "cannot be read" in reports[0]["message"]
    again = tag(model, corpus, tmp_path / "out")
    assert again.shards_written == 0 and again.shards_skipped == 2


# 12. file names that are not UTF-8


def test_a_file_name_that_is_not_utf8_gives_ids_that_are(model, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.jsonl")
    write_jsonl(folder / name, [{"text": "I like eggs"}, {"text": "Eat ham"}])
    summary = tag(model, folder, tmp_path / "out")
    assert summary.docs == 2 and summary.bad_records == 0
    ids = sorted(row["id"] for row in read_jsonl_rows(tmp_path / "out"))
    assert ids == ["caf\\xe9.jsonl:1", "caf\\xe9.jsonl:2"]
    assert tag(model, folder, tmp_path / "out").shards_skipped == 1


# 13. long and deep names


@pytest.mark.parametrize("shape", ["long", "deep"])
def test_long_and_deep_input_names_are_tagged_and_resumed(model, tmp_path, shape):
    folder = tmp_path / "in"
    if shape == "long":
        parent, name = folder, "n" * (240 - len(".jsonl")) + ".jsonl"
    else:
        parent, name = folder.joinpath(*["d" * 60] * 5), "part.jsonl"
    parent.mkdir(parents=True)
    write_jsonl(parent / name, records(3))
    summary = tag(model, folder, tmp_path / "out", shard_size=2)
    assert summary.docs == 3 and summary.shards_written == 2
    for path in (tmp_path / "out").iterdir():
        assert len(os.fsencode(path.name)) <= 255 - len(".tmp-") - 9
    assert tag(model, folder, tmp_path / "out", shard_size=2).shards_skipped == 2


def test_short_shard_names_keep_their_form():
    assert shard_file("a/b.jsonl.00000", "jsonl") == "a%2Fb.jsonl.00000.jsonl"
    long = shard_file("x" * 300 + ".jsonl.00003", "parquet")
    assert long.endswith(".00003.parquet") and len(long.encode()) <= 241
    assert long != shard_file("x" * 299 + "y.jsonl.00003", "parquet")


# minor ones


def test_a_single_hidden_temporary_looking_input_is_not_redone(model, tmp_path):
    path = write_jsonl(tmp_path / ".tmp-a.jsonl", records(2))
    assert tag(model, path, tmp_path / "out").shards_written == 1
    again = tag(model, path, tmp_path / "out")
    assert again.shards_written == 0 and again.shards_skipped == 1


def test_non_finite_ids_are_never_written_as_bare_nan(model, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(
        '{"id": NaN, "text": "eggs"}\n{"id": Infinity, "text": "ham"}\n{"id": 1, "text": "eggs"}\n'
    )
    summary = tag(model, tmp_path / "in", tmp_path / "out")
    text = "".join(p.read_text() for p in (tmp_path / "out").glob("a.jsonl.*.jsonl"))
    assert "NaN" not in text and "Infinity" not in text
    assert summary.docs == 1 and summary.bad_records == 2


def test_the_same_field_for_text_and_id_is_refused_up_front(model, corpus, tmp_path):
    with pytest.raises(ValueError, match="E126"):
        tag(model, corpus, tmp_path / "out", text_field="text", id_field="text")
    assert not (tmp_path / "out").exists()


def test_a_folder_where_the_job_would_delete_a_file_is_a_coded_error(model, corpus, tmp_path):
    out = tmp_path / "out"
    tag(model, corpus, out)
    (out / "job.json").unlink()
    (out / "job.json").mkdir()
    with pytest.raises(ValueError, match="E124.*job.json"):
        tag(model, corpus, out, overwrite=True)
    assert (out / "job.json").is_dir()


def test_a_docbin_input_over_its_bound_is_a_reported_file(model, corpus, tmp_path, monkeypatch):
    from ..corpus_data import write_docbin

    write_docbin(corpus / "big.spacy", ["I like eggs"] * 20)
    monkeypatch.setenv("SPACY_CRF_MAX_DOCBIN_BYTES", "100")
    summary = tag(model, corpus, tmp_path / "out")
    assert summary.docs == 3 and summary.bad_records == 1
    assert "SPACY_CRF_MAX_DOCBIN_BYTES" in bad_reports(tmp_path / "out")[0]["message"]
