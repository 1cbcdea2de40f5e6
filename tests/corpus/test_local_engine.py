"""Tagging a corpus on the local engine: readers, writers, resumption, bad
records, coded errors and the command line (the ray engine: test_corpus_ray.py)."""

import json
import pickle
import re
import string
import sys

import pytest
import spacy

from spacy_crf.corpus import BadRecordError, CorpusErrors, tag_corpus
from spacy_crf.corpus.inputs import plan_shards, read_chunk
from spacy_crf.corpus.outputs import MANIFEST, read_manifest, write_shard
from spacy_crf.errors import CORPUS_UNUSED

from ..corpus_data import (
    assert_rows_match,
    read_docbin_rows,
    read_jsonl_rows,
    read_parquet_rows,
    records,
    reference,
    run_command_line,
    train_tagger,
    write_docbin,
    write_jsonl,
    write_parquet,
    write_text,
)

CODES = sorted(name for name in vars(CorpusErrors) if re.fullmatch(r"E\d{3}", name))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "tagger")


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "ner", target="ents")


def tag(model, input, output, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("output_format", "jsonl")
    return tag_corpus(model, input, output, **kwargs)


def test_error_codes_are_numbered_and_format():
    assert not set(CODES) & set(CORPUS_UNUSED)
    numbered = sorted(CODES + list(CORPUS_UNUSED))
    assert numbered == [f"E{i}" for i in range(101, 101 + len(numbered))]
    for code in CODES:
        template = getattr(CorpusErrors, code)
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        message = template.format(**{name: f"<{name}>" for name in fields})
        assert message.startswith(f"[{code}] ") and "{" not in message and "}" not in message


def test_jsonl_equals_nlp_pipe_with_ids_and_fields(model, tmp_path):
    rows = records(30)
    write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=8, batch_size=3)
    out = read_jsonl_rows(tmp_path / "out")
    assert_rows_match(out, reference(model, {r["id"]: r["text"] for r in rows}))
    assert {row["id"]: row["n"] for row in out} == {r["id"]: r["n"] for r in rows}
    assert summary.docs == 30 and summary.shards == summary.shards_written == 4
    assert summary.words == sum(len(row["tokens"]) for row in out)
    manifest = read_manifest(tmp_path / "out")
    assert [manifest[name]["docs"] for name in sorted(manifest)] == [8, 8, 8, 6]
    assert sorted(p.name for p in (tmp_path / "out").glob("in.jsonl.*")) == [
        f"in.jsonl.{k:05d}.jsonl" for k in range(4)
    ]


def test_every_input_format_in_a_folder(model, tmp_path):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", records(5, "json"))
    write_text(folder / "sub" / "b.txt", ["Eat blue ham", "I like green eggs"])
    write_parquet(folder / "c.parquet", records(6, "pq"))
    write_docbin(folder / "d.spacy", ["I like  blue ham", "eggs"])
    (folder / "notes.md").write_text("not input")
    summary = tag(model, folder, tmp_path / "out")
    out = read_jsonl_rows(tmp_path / "out")
    inputs = {r["id"]: r["text"] for r in records(5, "json") + records(6, "pq")}
    inputs.update({"sub/b.txt:1": "Eat blue ham", "sub/b.txt:2": "I like green eggs"})
    nlp = spacy.blank("en")
    for i, text in enumerate(["I like  blue ham", "eggs"]):
        doc = nlp.make_doc(text)
        inputs[f"d.spacy:{i + 1}"] = ([t.text for t in doc], [bool(t.whitespace_) for t in doc])
    assert_rows_match(out, reference(model, inputs))
    assert all("GOLD" not in row["tags"] for row in out)  # DocBin input: tokens kept, tags predicted
    assert {row["id"]: row.get("n") for row in out if row["id"].startswith("pq")} == {f"pq-{i}": i for i in range(6)}
    assert (summary.shards, summary.docs) == (4, 15)


def test_parquet_text_column_and_output(model, tmp_path):
    import pyarrow.parquet

    write_parquet(tmp_path / "in.parquet", records(6, "pq"), text_column="body")
    summary = tag(model, tmp_path / "in.parquet", tmp_path / "out", text_field="body", output_format="parquet")
    rows = pyarrow.parquet.read_table(next((tmp_path / "out").glob("*.parquet"))).to_pylist()
    assert_rows_match(rows, reference(model, {r["id"]: r["text"] for r in records(6, "pq")}))
    assert [row["n"] for row in rows] == list(range(6)) and summary.docs == 6


def test_parquet_cut_into_shards_by_row_groups(tmp_path):
    rows = records(23)
    write_parquet(tmp_path / "in.parquet", rows, row_group_size=5)
    shards, chunks = plan_shards(tmp_path / "in.parquet", shard_size=10, batch_size=4)
    assert [(s.start, s.stop) for s in shards] == [(0, 10), (10, 20), (20, 23)]
    got = [r["id"] for s in shards for c in chunks[s.name] for r in read_chunk(c).records]
    assert got == [r["id"] for r in rows]


def test_large_text_file_cut_into_shards_and_chunks(tmp_path):
    lines = [f"line {i} é" for i in range(57)]
    path = tmp_path / "big.txt"
    path.write_bytes(("\r\n".join(lines)).encode("utf8"))  # CRLF, no final newline
    shards, chunks = plan_shards(path, shard_size=20, batch_size=6)
    assert [(s.name, s.start, s.stop) for s in shards] == [
        ("big.txt.00000", 0, 20),
        ("big.txt.00001", 20, 40),
        ("big.txt.00002", 40, 57),
    ]
    assert [(c.start, c.stop) for c in chunks["big.txt.00001"]] == [(20, 26), (26, 32), (32, 38), (38, 40)]
    texts = [r["text"] for s in shards for c in chunks[s.name] for r in read_chunk(c).records]
    assert texts == lines
    assert plan_shards(path, shard_size=20, batch_size=6) == (shards, chunks)


@pytest.mark.parametrize("output_format", ["jsonl", "parquet", "docbin"])
def test_output_formats_hold_the_same_annotation(model, tmp_path, output_format):
    rows = records(12)
    write_jsonl(tmp_path / "in.jsonl", rows)
    tag(model, tmp_path / "in.jsonl", tmp_path / "out", output_format=output_format, shard_size=5)
    expected = reference(model, {r["id"]: r["text"] for r in rows})
    if output_format == "jsonl":
        out = read_jsonl_rows(tmp_path / "out")
    elif output_format == "parquet":
        out = read_parquet_rows(tmp_path / "out")
    else:
        out = read_docbin_rows(tmp_path / "out", model)
    assert_rows_match(out, expected)
    assert sorted(row["n"] for row in out) == list(range(12))


def test_entities_target(ner_model, tmp_path):
    rows = records(11)
    write_jsonl(tmp_path / "in.jsonl", rows)
    tag(ner_model, tmp_path / "in.jsonl", tmp_path / "out")
    out = read_jsonl_rows(tmp_path / "out")
    assert all("entities" in row and "tags" not in row for row in out)
    assert any(row["entities"] for row in out)
    assert_rows_match(out, reference(ner_model, {r["id"]: r["text"] for r in rows}))


def test_resumes_after_a_stop_each_document_once(model, tmp_path):
    rows = records(40)
    write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    first = tag(model, tmp_path / "in.jsonl", out, shard_size=6, max_shards=3)
    assert (first.shards, first.shards_written, first.docs) == (7, 3, 18)
    assert len(read_jsonl_rows(out)) == 18
    second = tag(model, tmp_path / "in.jsonl", out, shard_size=6)
    assert (second.shards_skipped, second.shards_written, second.docs) == (3, 4, 22)
    assert_rows_match(read_jsonl_rows(out), reference(model, {r["id"]: r["text"] for r in rows}))
    third = tag(model, tmp_path / "in.jsonl", out, shard_size=6)
    assert (third.shards_skipped, third.shards_written, third.docs) == (7, 0, 0)


def test_resumes_after_a_kill_mid_shard(model, tmp_path):
    """What a killed job leaves: a partial temporary file, a shard renamed but
    not yet in the manifest, a torn manifest line, a deleted shard file."""
    rows = records(20)
    write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    tag(model, tmp_path / "in.jsonl", out, shard_size=5)
    lines = (out / MANIFEST).read_text().splitlines()
    (out / MANIFEST).write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # shards 1-3 not done
    (out / ".tmp-in.jsonl.00002.jsonl").write_text('{"id": "doc-1')
    (out / "in.jsonl.00000.jsonl").unlink()  # listed, but its file is gone
    summary = tag(model, tmp_path / "in.jsonl", out, shard_size=5)
    assert (summary.shards_skipped, summary.shards_written) == (0, 4)
    assert not list(out.glob(".tmp-*"))
    assert_rows_match(read_jsonl_rows(out), reference(model, {r["id"]: r["text"] for r in rows}))
    assert sum(entry["docs"] for entry in read_manifest(out).values()) == 20


def test_changed_settings_or_model_in_the_same_output_are_refused(model, ner_model, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", records(3))
    tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=5)
    with pytest.raises(ValueError, match=r"\[E108\].*shard_size: 5 there, 4 now"):
        tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=4)
    with pytest.raises(ValueError, match=r"\[E108\].*model_sha256"):
        tag(ner_model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=5)
    (tmp_path / "out" / "mine.txt").write_text("kept")
    summary = tag(ner_model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=4, overwrite=True)
    assert summary.shards_written == 1 and summary.docs == 3
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".lock",
        "in.jsonl.00000.jsonl",
        "job.json",
        "manifest.jsonl",
        "mine.txt",
    ]


BAD_LINES = [
    b'{"id": "a", "text": "I like ham"}',
    b'{"id": "b", "text": "broken',
    b'{"id": "c", "body": "no text field"}',
    b'{"id": "d", "text": "caf\xe9 latte"}',
    b'["a list"]',
    b'{"id": "f", "text": 7}',
    b"",
    b'{"id": "h", "text": "Eat eggs"}',
]


def test_bad_records_are_skipped_and_counted(model, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(BAD_LINES) + b"\n")
    summary = tag(model, path, tmp_path / "out", batch_size=3)
    assert sorted(row["id"] for row in read_jsonl_rows(tmp_path / "out")) == ["a", "h"]
    assert summary.bad_records == 5 and summary.docs == 2
    messages = summary.bad_messages
    assert all(message.startswith(f"[E105] Bad record in {path}, line ") for message in messages)
    assert "line 2: not valid JSON" in messages[0]
    assert "line 3: no field 'text'" in messages[1]
    assert "line 4: invalid UTF-8 at byte 24" in messages[2]
    assert "line 5: expected a JSON object, got list" in messages[3]
    assert "line 6: field 'text' is int, not a string" in messages[4]
    assert next(iter(read_manifest(tmp_path / "out").values()))["bad_records"] == 5


def test_bad_records_raise_when_asked(model, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(BAD_LINES) + b"\n")
    with pytest.raises(BadRecordError, match=r"\[E105\] Bad record in .*in.jsonl, line 2: not valid JSON"):
        tag(model, path, tmp_path / "out", on_error="raise")
    assert not list((tmp_path / "out").glob("in.jsonl.*"))


def test_bad_parquet_and_text_records(model, tmp_path):
    write_parquet(tmp_path / "in.parquet", [{"id": "x", "text": "eggs"}, {"id": "y", "text": None}])
    summary = tag(model, tmp_path / "in.parquet", tmp_path / "out")
    assert summary.docs == 1 and "row 2: column 'text': the text is null" in summary.bad_messages[0]
    (tmp_path / "in.txt").write_bytes(b"fine\n\xff\xfe bad\n\nalso fine\n")
    summary = tag(model, tmp_path / "in.txt", tmp_path / "out-txt")
    assert summary.docs == 2 and summary.bad_records == 1
    assert "in.txt, line 2: invalid UTF-8 at byte 0" in summary.bad_messages[0]


def test_errors_before_any_work(model, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", records(2))
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "empty").mkdir()
    (tmp_path / "data.csv").write_text("text\nhi\n")
    blank = tmp_path / "blank"
    spacy.blank("en").to_disk(blank)
    cases = [
        ("E101", dict(input=tmp_path / "nowhere.jsonl")),
        ("E102", dict(input=tmp_path / "empty.jsonl")),
        ("E102", dict(input=tmp_path / "empty")),
        ("E103", dict(model=tmp_path / "no-model")),
        ("E103", dict(model="en_no_such_package")),
        ("E104", dict(model=blank)),
        ("E106", dict(input=tmp_path / "data.csv")),
        ("E107", dict(engine="spark")),
        ("E107", dict(output_format="csv")),
        ("E107", dict(on_error="ignore")),
        ("E107", dict(input_format="csv")),
        ("E110", dict(input=write_parquet(tmp_path / "x.parquet", records(2)), text_field="body")),
        ("E111", dict(workers=0)),
        ("E111", dict(batch_size=0)),
        ("E112", dict(workers=2, gpus_per_worker=1)),
    ]
    for code, kwargs in cases:
        args = {"model": model, "input": tmp_path / "in.jsonl", **kwargs}
        with pytest.raises(ValueError, match=rf"\[{code}\]"):
            tag(args.pop("model"), args.pop("input"), tmp_path / "out", **args)
    assert not (tmp_path / "out").exists()


def test_ray_missing_gives_a_clear_error(model, tmp_path, monkeypatch):
    write_jsonl(tmp_path / "in.jsonl", records(2))
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"\[E109\].*spacy-crf\[ray\]"):
        tag(model, tmp_path / "in.jsonl", tmp_path / "out", engine="ray")
    assert not (tmp_path / "out").exists()


def test_pyarrow_missing_gives_a_clear_error_for_parquet_only(model, tmp_path, monkeypatch):
    """Parquet input or output without pyarrow: E113 before anything is
    written; the other formats work without it."""
    write_parquet(tmp_path / "in.parquet", records(3))
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", records(3))
    write_text(folder / "b.txt", ["Eat blue ham"])
    write_docbin(folder / "c.spacy", ["eggs"])
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(
        ImportError, match=r'^\[E113\] Reading Parquet needs pyarrow: pip install "spacy-crf\[corpus\]"'
    ):
        tag(model, tmp_path / "in.parquet", tmp_path / "out-read")
    with pytest.raises(
        ImportError, match=r'^\[E113\] Writing Parquet needs pyarrow: pip install "spacy-crf\[corpus\]"'
    ):
        tag(model, folder, tmp_path / "out-write", output_format="parquet")
    assert not (tmp_path / "out-read").exists() and not (tmp_path / "out-write").exists()
    (tmp_path / "shards").mkdir()
    with pytest.raises(ImportError, match=r"^\[E113\] Writing Parquet"):
        write_shard(tmp_path / "shards", "x", [pickle.dumps([{"id": "a"}])], output_format="parquet")
    assert not list((tmp_path / "shards").iterdir())
    for output_format in ("jsonl", "docbin"):
        summary = tag(model, folder, tmp_path / output_format, output_format=output_format)
        assert (summary.docs, summary.shards_written) == (5, 3)


@pytest.mark.slow
def test_local_workers_give_the_same_output(model, tmp_path):
    """nlp.pipe(n_process=2) writes byte-identical shards to one process."""
    write_jsonl(tmp_path / "in.jsonl", records(30))
    tag(model, tmp_path / "in.jsonl", tmp_path / "one", shard_size=7, batch_size=4)
    tag(model, tmp_path / "in.jsonl", tmp_path / "two", shard_size=7, batch_size=4, workers=2)
    names = sorted(p.name for p in (tmp_path / "one").glob("in.jsonl.*"))
    assert names == sorted(p.name for p in (tmp_path / "two").glob("in.jsonl.*")) and len(names) == 5
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_command_line(model, tmp_path, capsys, monkeypatch):
    """`python -m spacy_crf tag`, run in this process (corpus_data.run_command_line)."""
    write_jsonl(tmp_path / "in.jsonl", records(6))
    args = [
        "tag",
        model,
        tmp_path / "in.jsonl",
        tmp_path / "out",
        "--output-format",
        "jsonl",
        "--batch-size",
        "4",
        "--no-progress",
    ]
    status, stdout, stderr = run_command_line(args, capsys, monkeypatch)
    assert status == 0, stderr[-3000:]
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["docs"] == 6 and summary["shards_written"] == 1 and summary["bad_records"] == 0
    assert "Tagged 6 docs" in stdout
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {r["id"]: r["text"] for r in records(6)}))
    status, stdout, _ = run_command_line(
        args[:2] + [tmp_path / "missing.jsonl", tmp_path / "out2"], capsys, monkeypatch
    )
    assert status == 1 and "[E101]" in stdout  # a message, no traceback


def test_joint_target_writes_tags_and_pos_columns():
    from spacy_crf.corpus.pipeline import outputs_of

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag+pos"})
    assert outputs_of(nlp).targets == ("pos", "tag")
