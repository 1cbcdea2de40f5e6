"""Every file the package writes gets the mode a plain open() gives it: a new
file 0o666 less the umask, a replaced one keeps its mode (spacy_crf.files.write_atomic)."""

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spacy_crf.corpus import tag_corpus
from spacy_crf.files import write_atomic

from ..corpus_data import records, train_tagger, write_jsonl
from ..helpers import make_examples, make_nlp, train


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def modes(folder: Path):
    """The permission bits of every file under folder, by relative path."""
    return {
        str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def nlp():
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=2)
    return nlp


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_saved_pipeline_has_the_umask_modes(nlp, tmp_path, mask, mode):
    with umask(mask):
        nlp.to_disk(tmp_path / "pipeline")
    saved = modes(tmp_path / "pipeline")
    assert {"crf_tagger/cfg", "crf_tagger/model"} <= set(saved)
    assert set(saved.values()) == {mode}, saved


def test_replacing_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "file"
    path.write_text("old")
    path.chmod(0o640)
    with umask(0o077):
        write_atomic(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    with umask(0o022):
        write_atomic(tmp_path / "fresh", lambda tmp: Path(tmp).write_text("made by a writer"))
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o644
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_saving_over_a_pipeline_keeps_its_modes(nlp, tmp_path):
    with umask(0o022):
        nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "pipeline" / "crf_tagger" / "model").chmod(0o640)
    with umask(0o077):
        nlp.to_disk(tmp_path / "pipeline")
    assert stat.S_IMODE((tmp_path / "pipeline" / "crf_tagger" / "model").stat().st_mode) == 0o640


def test_corpus_outputs_have_the_umask_modes(tmp_path):
    model = train_tagger(tmp_path / "model")
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "part.jsonl", records(12))
    with umask(0o022):
        tag_corpus(model, tmp_path / "in", tmp_path / "out", output_format="jsonl", progress=False, shard_size=5)
    written = modes(tmp_path / "out")
    assert any(name.endswith(".jsonl") and "part" in name for name in written) and "manifest.jsonl" in written
    assert set(written.values()) == {0o644}, written


def as_nobody(code: str) -> subprocess.CompletedProcess:
    """Run Python code in this interpreter as the account nobody (65534)."""
    script = f"import os; os.setgid(65534); os.setuid(65534); {code}"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to act as another uid")
def test_another_account_loads_a_pipeline_saved_under_umask_022(nlp):
    """A build step (root here) saves; a service account (nobody) loads."""
    if as_nobody("import spacy_crf").returncode != 0:
        pytest.skip("this interpreter or checkout is not readable by nobody")
    folder = Path(tempfile.mkdtemp(prefix="spacy-crf-modes-"))  # in the system's temp dir, 0o700
    try:
        folder.chmod(0o755)
        with umask(0o022):
            nlp.to_disk(folder / "pipeline")
        result = as_nobody(
            f"import spacy; nlp = spacy.load({str(folder / 'pipeline')!r}); print(len(nlp('I like ham')))"
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == "3"
    finally:
        shutil.rmtree(folder)
