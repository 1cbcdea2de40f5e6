"""Tagging a corpus on the ray engine, on a local 2-CPU Ray cluster started
once for the module: the same output as nlp.pipe and the local engine, for
every input format; resumption; a worker that dies; bad records, of reading
and of the pipeline."""
import pytest
import spacy
import torch

from spacy_crf.corpus import BadRecordError, tag_corpus
from spacy_crf.corpus.writers import read_manifest

from . import ray_faults
from .corpus_data import (
    assert_rows_match,
    read_jsonl_rows,
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


@pytest.fixture(scope="module")
def fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module", autouse=True)
def cluster(fault_dir):
    """One cluster for the module; its workers can be armed to kill an actor
    (tests/ray_faults.py), which they never do unless a test arms them."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             runtime_env=ray_faults.runtime_env(fault_dir, torch.get_num_threads()))
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


def shard_bytes(folder):
    return {p.name: p.read_bytes() for p in folder.glob("*.*") if p.name not in ("manifest.jsonl", "job.json")}


def test_every_input_format_equals_nlp_pipe_and_the_local_engine(model, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", records(14, "json"))
    write_text(folder / "b.txt", ["Eat blue ham", "I like green eggs", "eggs"])
    write_parquet(folder / "c.parquet", records(9, "pq"))
    write_docbin(folder / "d.spacy", ["I like  blue ham", "eggs"])
    summary = tag(model, folder, tmp_path / "ray", workers=2, shard_size=5, batch_size=2)
    assert (summary.docs, summary.shards, summary.shards_written) == (28, 7, 7)
    assert summary.startup_seconds == 0.0  # the module's cluster was already up
    inputs = {r["id"]: r["text"] for r in records(14, "json") + records(9, "pq")}
    inputs.update({"b.txt:1": "Eat blue ham", "b.txt:2": "I like green eggs", "b.txt:3": "eggs"})
    nlp = spacy.blank("en")
    for i, text in enumerate(["I like  blue ham", "eggs"]):
        doc = nlp.make_doc(text)
        inputs[f"d.spacy:{i + 1}"] = ([t.text for t in doc], [bool(t.whitespace_) for t in doc])
    out = read_jsonl_rows(tmp_path / "ray")
    assert_rows_match(out, reference(model, inputs))
    assert {row["id"]: row["n"] for row in out if "n" in row} == {
        **{f"json-{i}": i for i in range(14)}, **{f"pq-{i}": i for i in range(9)}
    }
    tag(model, folder, tmp_path / "local", engine="local", shard_size=5, batch_size=2)
    assert shard_bytes(tmp_path / "ray") == shard_bytes(tmp_path / "local")


@pytest.mark.parametrize("output_format", ["docbin", "parquet"])
def test_binary_outputs_equal_the_local_engine(model, tmp_path, output_format):
    write_jsonl(tmp_path / "in.jsonl", records(12))
    tag(model, tmp_path / "in.jsonl", tmp_path / "ray", output_format=output_format, shard_size=5, workers=1)
    tag(model, tmp_path / "in.jsonl", tmp_path / "local", output_format=output_format, shard_size=5, engine="local")
    ray_shards, local_shards = shard_bytes(tmp_path / "ray"), shard_bytes(tmp_path / "local")
    assert len(ray_shards) == 3 and sorted(ray_shards) == sorted(local_shards)
    if output_format == "docbin":  # DocBin bytes are deterministic; Parquet files carry writer metadata
        assert ray_shards == local_shards
    else:
        import pyarrow.parquet

        for name in ray_shards:
            assert (pyarrow.parquet.read_table(tmp_path / "ray" / name)
                    .equals(pyarrow.parquet.read_table(tmp_path / "local" / name)))


def test_resumes_after_a_stop_each_document_once(model, tmp_path):
    rows = records(25)
    write_jsonl(tmp_path / "in.jsonl", rows)
    # one actor a run: resumption is the manifest's work, not the pool's
    first = tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=4, max_shards=3)
    assert (first.shards, first.shards_written, first.docs) == (7, 3, 12)
    second = tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=4)
    assert (second.shards_skipped, second.shards_written, second.docs) == (3, 4, 13)
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {r["id"]: r["text"] for r in rows}))


def test_a_worker_killed_mid_run_loses_no_document(model, tmp_path, fault_dir):
    rows = records(30)
    write_jsonl(tmp_path / "in.jsonl", rows)
    with ray_faults.one_actor_killed(fault_dir) as marker:  # the first actor to get a chunk exits
        summary = tag(model, tmp_path / "in.jsonl", tmp_path / "out", shard_size=10, batch_size=4, workers=2)
    assert marker.exists()
    assert summary.docs == 30 and summary.shards_written == 3
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {r["id"]: r["text"] for r in rows}))
    assert sum(entry["docs"] for entry in read_manifest(tmp_path / "out").values()) == 30


def test_bad_records_skipped_or_raised(model, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "a", "text": "eggs"}\n{"id": "b"\n{"id": "c", "text": "caf\xe9"}\n{"id": "d", "text": "ham"}\n')
    summary = tag(model, path, tmp_path / "out", batch_size=2)
    assert sorted(row["id"] for row in read_jsonl_rows(tmp_path / "out")) == ["a", "d"]
    assert summary.bad_records == 2
    assert [m.split(", ", 1)[1].split(":")[0] for m in summary.bad_messages] == ["line 2", "line 3"]
    with pytest.raises(BadRecordError, match=r"\[E105\] Bad record in .*in.jsonl, line 2"):
        tag(model, path, tmp_path / "out-raise", on_error="raise")


def test_records_that_fail_in_the_pipeline_are_reported_on_ray(model, tmp_path):
    """A lone surrogate (spaCy's tokenizer), a text over max_length and an id
    that cannot be encoded are bad records on the actors too: no RayTaskError,
    and their batch-mates are tagged."""
    import json

    rows = [{"id": "a", "text": "I like ham"}, {"id": "b", "text": "x \ud800"}, {"id": "c", "text": "eggs " * 200_001},
            {"id": "d\ud800", "text": "ham"}, {"id": "e", "text": "Eat eggs"}]
    write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tag(model, tmp_path / "in.jsonl", tmp_path / "out", workers=1)
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {"a": "I like ham", "e": "Eat eggs"}))
    reports = [json.loads(line) for line in next((tmp_path / "out" / "bad_records").iterdir()).read_text().splitlines()]
    assert [(r["id"], r["code"]) for r in reports] == [("b", "E114"), ("c", "E114"), ("d\ud800", "E115")]
    assert summary.bad_records == 3


def test_command_line_joins_a_running_cluster(model, tmp_path):
    """`--address`: a second driver (the CLI) joins the module's cluster."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    write_jsonl(tmp_path / "in.jsonl", records(9))
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent.parent)}
    result = subprocess.run(
        [sys.executable, "-m", "spacy_crf", "tag", str(model), str(tmp_path / "in.jsonl"), str(tmp_path / "out"),
         "--engine", "ray", "--address", address, "--workers", "1", "--batch-size", "3", "--output-format", "jsonl"],
        capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["docs"] == 9 and summary["bad_records"] == 0
    assert "tagging (ray)" in result.stderr  # the progress bar
    assert_rows_match(read_jsonl_rows(tmp_path / "out"), reference(model, {r["id"]: r["text"] for r in records(9)}))
