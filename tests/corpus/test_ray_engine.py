"""Tagging a corpus on the ray engine, on a local 2-CPU Ray cluster started
once for the module: the same output as nlp.pipe and the local engine, for
every input format and output format; resumption, from the command line
joined to the running cluster; a worker that dies; bad records, of reading and
of the pipeline, skipped or raised.

Every job costs tens of seconds on a 2-core machine (each actor is a new
process that imports spaCy and torch and rebuilds the pipeline), so the tests
run few jobs that each check much: one reads every input format and every
kind of bad record while an actor is killed; one stops after three shards
and the command line resumes it; one raises on a bad record; one writes
Parquet. The tests run in this order, on the same cluster."""

import json
import os
import subprocess
import sys

import pytest
import spacy
import torch

from spacy_crf.corpus import BadRecordError, tag_corpus
from spacy_crf.corpus.outputs import read_manifest

from .. import ray_faults
from ..corpus_data import (
    assert_rows_match,
    output_files,
    read_docbin_rows,
    read_jsonl_rows,
    read_parquet_rows,
    records,
    reference,
    train_tagger,
    write_docbin,
    write_jsonl,
    write_parquet,
    write_text,
)

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

# records that cannot be read: line 2 is not JSON, line 3 not UTF-8
UNREADABLE = (
    b'{"id": "ra", "text": "eggs"}\n{"id": "rb"\n{"id": "rc", "text": "caf\xe9"}\n{"id": "rd", "text": "ham"}\n'
)
# records that fail in the pipeline, on the actors: a lone surrogate (spaCy's
# tokenizer) and a text over max_length cannot be tagged (E114), an id that
# cannot be encoded cannot be written (E115)
UNTAGGABLE = [
    {"id": "pa", "text": "I like ham"},
    {"id": "pb", "text": "x \ud800"},
    {"id": "pc", "text": "eggs " * 200_001},
    {"id": "pd\ud800", "text": "ham"},
    {"id": "pe", "text": "Eat eggs"},
]


@pytest.fixture(scope="module")
def fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module", autouse=True)
def cluster(fault_dir):
    """One cluster for the module; its workers can be armed to kill an actor
    (tests/ray_faults.py), which they never do unless a test arms them."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="WARNING",
        runtime_env=ray_faults.runtime_env(fault_dir, torch.get_num_threads()),
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tagger(tmp_path_factory.mktemp("model") / "tagger")


def tag(model, input, output, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("output_format", "jsonl")
    kwargs.setdefault("engine", "ray")
    return tag_corpus(model, input, output, **kwargs)


def bad_reports(output):
    """Every bad-record report in the output folder, in file order."""
    return [
        json.loads(line)
        for path in sorted((output / "bad_records").glob("*.jsonl"))
        for line in path.read_text(encoding="ascii").splitlines()
    ]


def test_every_input_format_and_bad_record_with_an_actor_killed(model, tmp_path, fault_dir):
    """One job on two actors, of which the first to get a chunk dies (Ray
    restarts it and its chunk is redone): every input format, records that
    cannot be read and records that fail in the pipeline on the actors (no
    RayTaskError; their batch-mates are tagged). Each document once, as
    nlp.pipe tags it; shards and bad-record files byte for byte the local
    engine's."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", records(14, "json"))
    write_text(folder / "b.txt", ["Eat blue ham", "I like green eggs", "eggs"])
    write_parquet(folder / "c.parquet", records(9, "pq"))
    write_docbin(folder / "d.spacy", ["I like  blue ham", "eggs"])
    (folder / "e.jsonl").write_bytes(UNREADABLE)
    write_jsonl(folder / "f.jsonl", UNTAGGABLE)
    settings = dict(shard_size=5, batch_size=2)
    with ray_faults.one_actor_killed(fault_dir) as marker:
        summary = tag(model, folder, tmp_path / "ray", workers=2, **settings)
    assert marker.exists()  # an actor died mid-run
    assert (summary.docs, summary.shards, summary.shards_written, summary.bad_records) == (32, 9, 9, 5)
    assert summary.startup_seconds == 0.0  # the module's cluster was already up
    assert sum(entry["docs"] for entry in read_manifest(tmp_path / "ray").values()) == 32

    inputs = {r["id"]: r["text"] for r in records(14, "json") + records(9, "pq")}
    inputs.update({"b.txt:1": "Eat blue ham", "b.txt:2": "I like green eggs", "b.txt:3": "eggs"})
    inputs.update({"ra": "eggs", "rd": "ham", "pa": "I like ham", "pe": "Eat eggs"})
    nlp = spacy.blank("en")
    for i, text in enumerate(["I like  blue ham", "eggs"]):
        doc = nlp.make_doc(text)
        inputs[f"d.spacy:{i + 1}"] = ([t.text for t in doc], [bool(t.whitespace_) for t in doc])
    out = read_jsonl_rows(tmp_path / "ray")
    assert_rows_match(out, reference(model, inputs))
    assert {row["id"]: row["n"] for row in out if "n" in row} == {
        **{f"json-{i}": i for i in range(14)},
        **{f"pq-{i}": i for i in range(9)},
    }

    reports = bad_reports(tmp_path / "ray")
    assert [(r["source"], r["position"], r["id"], r["code"]) for r in reports] == [
        ("e.jsonl", 2, "e.jsonl:2", "E105"),
        ("e.jsonl", 3, "rc", "E105"),
        ("f.jsonl", 2, "pb", "E114"),
        ("f.jsonl", 3, "pc", "E114"),
        ("f.jsonl", 4, "pd\ud800", "E115"),
    ]
    assert sorted(m.split(", ", 1)[1].split(":")[0] for m in summary.bad_messages if "e.jsonl" in m) == [
        "line 2",
        "line 3",
    ]
    tag(model, folder, tmp_path / "local", engine="local", **settings)
    ray_files, local_files = output_files(tmp_path / "ray"), output_files(tmp_path / "local")
    assert len(ray_files) == 11 and ray_files == local_files  # 9 shards, 2 bad-record files


def test_resumes_from_the_command_line_joined_to_the_cluster(model, tmp_path):
    """A job stops after three shards; `python -m spacy_crf tag --address`, a
    second driver that joins the module's cluster, resumes it: each document
    once, and DocBin shards byte for byte the local engine's. One actor a run:
    resumption is the manifest's work, not the pool's."""
    rows = records(25)
    write_jsonl(tmp_path / "in.jsonl", rows)
    settings = dict(output_format="docbin", shard_size=4, batch_size=3)
    first = tag(model, tmp_path / "in.jsonl", tmp_path / "ray", max_shards=3, workers=1, **settings)
    assert (first.shards, first.shards_written, first.docs) == (7, 3, 12)

    address = ray.get_runtime_context().gcs_address
    # the second job's actors compute with the threads of this process, as the local engine here does
    runtime_env = {"env_vars": {"OMP_NUM_THREADS": str(torch.get_num_threads())}}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ray_faults.ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy_crf",
            "tag",
            str(model),
            str(tmp_path / "in.jsonl"),
            str(tmp_path / "ray"),
            "--engine",
            "ray",
            "--address",
            address,
            "--runtime-env",
            json.dumps(runtime_env),
            "--workers",
            "1",
            "--batch-size",
            "3",
            "--shard-size",
            "4",
            "--output-format",
            "docbin",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    second = json.loads(result.stdout.strip().splitlines()[-1])
    assert (second["shards_skipped"], second["shards_written"], second["docs"], second["bad_records"]) == (3, 4, 13, 0)
    assert "tagging (ray)" in result.stderr  # the progress bar

    assert_rows_match(read_docbin_rows(tmp_path / "ray", model), reference(model, {r["id"]: r["text"] for r in rows}))
    tag(model, tmp_path / "in.jsonl", tmp_path / "local", engine="local", **settings)
    ray_files, local_files = output_files(tmp_path / "ray"), output_files(tmp_path / "local")
    assert len(ray_files) == 7 and ray_files == local_files


def test_a_bad_record_raises_when_asked(model, tmp_path):
    """The job stops at the first bad record; the cluster stays usable (the
    next test's job runs on it)."""
    (tmp_path / "in.jsonl").write_bytes(UNREADABLE)
    with pytest.raises(BadRecordError, match=r"\[E105\] Bad record in .*in.jsonl, line 2"):
        tag(model, tmp_path / "in.jsonl", tmp_path / "out", on_error="raise")


def test_parquet_output_equals_the_local_engine(model, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", records(12))
    tag(model, tmp_path / "in.jsonl", tmp_path / "ray", output_format="parquet", shard_size=5, workers=1)
    tag(model, tmp_path / "in.jsonl", tmp_path / "local", output_format="parquet", shard_size=5, engine="local")
    ray_files, local_files = output_files(tmp_path / "ray"), output_files(tmp_path / "local")
    assert len(ray_files) == 3 and sorted(ray_files) == sorted(local_files)
    import pyarrow.parquet

    for name in ray_files:  # Parquet files carry writer metadata: the tables are compared
        assert pyarrow.parquet.read_table(tmp_path / "ray" / name).equals(
            pyarrow.parquet.read_table(tmp_path / "local" / name)
        )
    assert_rows_match(read_parquet_rows(tmp_path / "ray"), reference(model, {r["id"]: r["text"] for r in records(12)}))
