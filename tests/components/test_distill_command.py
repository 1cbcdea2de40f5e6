"""`python -m spacy_crf distill`: a student built from its config with the
teacher's labels, the teacher's scores cached once, raw text added, dev
scored on gold, model-best and model-last saved, a stopped run resumed to
the same end; and its errors."""

import json
from pathlib import Path

import numpy
import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import fix_random_seed

import spacy_crf.resumable_training as resumable
from spacy_crf import distill as distill_command
from spacy_crf.__main__ import main
from spacy_crf.distill import CachedTeacher, read_raw, teacher_components, training_examples
from spacy_crf.ml.teacher_scores import TeacherScores

from ..helpers import SENTENCES, make_nlp, train, write_docbin

ROOT = Path(__file__).parents[2]


class Stop(Exception):
    """A kill at a chosen update."""


@pytest.fixture(scope="module")
def teacher_path(tmp_path_factory):
    """A small crf_tagger trained on SENTENCES, saved."""
    fix_random_seed(0)
    nlp = make_nlp()
    docs = [Doc(nlp.vocab, words=words, tags=tags) for words, tags in SENTENCES]
    train(nlp, [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in docs], steps=40)
    path = tmp_path_factory.mktemp("teacher") / "model"
    nlp.to_disk(path)
    return path


def arguments(teacher_path, tmp_path, output, *extra):
    corpus = tmp_path / "train.spacy"
    if not corpus.exists():
        write_docbin(corpus)
    return [
        "distill",
        str(teacher_path),
        str(ROOT / "configs" / "cpu.cfg"),
        "--output",
        str(output),
        "--no-progress",
        "--paths.train",
        str(corpus),
        "--paths.dev",
        str(corpus),
        "--training.max_steps",
        "8",
        "--training.eval_frequency",
        "4",
        "--training.batcher.size",
        "20",
        "--training.optimizer.learn_rate.total_steps",
        "8",
        "--training.optimizer.learn_rate.warmup_steps",
        "2",
        "--components.crf_tagger.model.hidden_width",
        "16",
        *extra,
    ]


def weights_of(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_distill_command_trains_a_student_that_runs_without_the_teacher(teacher_path, tmp_path):
    texts = tmp_path / "more.jsonl"
    srsly.write_jsonl(texts, [{"text": "They like green ham ."}, {"text": "Eat eggs !"}])
    output = tmp_path / "student"
    assert main(arguments(teacher_path, tmp_path, output, "--text", str(texts))) == 0
    meta = srsly.read_json(output / "teacher_scores" / "meta.json")
    assert meta["docs"] == 12 + 2 and meta["tags"]["crf_tagger"] == list(
        spacy.load(teacher_path).get_pipe("crf_tagger").tags
    )
    for name in ("model-best", "model-last"):
        student = spacy.load(output / name)
        assert student.pipe_names == ["crf_tagger"]
        assert set(student.get_pipe("crf_tagger").labels) == {t for _, tags in SENTENCES for t in tags}
        assert len(student("I like green eggs .")) == 5
    state = srsly.read_json(output / "checkpoint" / "state.json")
    assert state["step"] == 8 and [row["step"] for row in state["evaluations"]] == [0, 4, 8]
    assert all("tag_acc" in row["scores"] for row in state["evaluations"])


@pytest.mark.slow
def test_a_stopped_distillation_resumes_to_the_same_end_with_the_cached_scores(teacher_path, tmp_path, capsys):
    whole = tmp_path / "whole"
    assert main(arguments(teacher_path, tmp_path, whole)) == 0
    resumed = tmp_path / "resumed"
    original = resumable.subdivide_batch
    calls = {"n": 0}

    def stopping(batch, accumulate):
        calls["n"] += 1
        if calls["n"] == 6:
            raise Stop
        return original(batch, accumulate)

    resumable.subdivide_batch = stopping
    try:
        with pytest.raises(Stop):
            main(arguments(teacher_path, tmp_path, resumed))
    finally:
        resumable.subdivide_batch = original
    capsys.readouterr()
    assert main(arguments(teacher_path, tmp_path, resumed)) == 0
    out = capsys.readouterr().out
    assert "Reading the teacher's scores of 12 training docs" in out
    assert srsly.read_json(resumed / "checkpoint" / "state.json")["segments"] == 2
    assert weights_of(resumed / "model-last") == weights_of(whole / "model-last")
    assert weights_of(resumed / "model-best") == weights_of(whole / "model-best")


def test_raw_text_is_read_from_txt_jsonl_and_spacy_files(tmp_path):
    nlp = spacy.blank("en")
    (tmp_path / "a.txt").write_text("I like eggs\n\nEat ham\n", encoding="utf8")
    srsly.write_jsonl(tmp_path / "b.jsonl", [{"text": "Green ham"}])
    DocBin(docs=[Doc(nlp.vocab, words=["blue", "eggs"], tags=["JJ", "NNS"])]).to_disk(tmp_path / "c.spacy")
    assert [d.text for d in read_raw(nlp, tmp_path / "a.txt")] == ["I like eggs", "Eat ham"]
    assert [d.text for d in read_raw(nlp, tmp_path / "b.jsonl")] == ["Green ham"]
    (doc,) = read_raw(nlp, tmp_path / "c.spacy")
    assert [t.text for t in doc] == ["blue", "eggs"] and not doc.has_annotation("TAG")
    (tmp_path / "d.csv").write_text("x\n")
    with pytest.raises(ValueError, match=r"\[E071\].*d\.csv.*suffix"):
        read_raw(nlp, tmp_path / "d.csv")
    srsly.write_jsonl(tmp_path / "e.jsonl", [{"text": "ok"}, {"body": "no text"}])
    with pytest.raises(ValueError, match=r"\[E071\].*line 2"):
        read_raw(nlp, tmp_path / "e.jsonl")


def test_training_docs_lose_their_annotation_and_are_numbered(teacher_path, tmp_path):
    write_docbin(tmp_path / "train.spacy")
    (tmp_path / "more.txt").write_text("Eat blue eggs\n", encoding="utf8")
    config = spacy.util.load_config(
        ROOT / "configs" / "cpu.cfg",
        overrides={"paths.train": str(tmp_path / "train.spacy"), "paths.dev": str(tmp_path / "train.spacy")},
        interpolate=False,
    )
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = training_examples(nlp, [tmp_path / "more.txt"])
    assert len(examples) == 13
    assert [t.text for t in examples[-1].reference] == ["Eat", "blue", "eggs"]
    for i, eg in enumerate(examples):
        assert not eg.reference.has_annotation("TAG") and eg.reference.user_data["spacy_crf.distill_index"] == i
        assert [t.text for t in eg.predicted] == [t.text for t in eg.reference]


def test_a_student_component_without_a_teacher_is_refused(teacher_path):
    teacher = spacy.load(teacher_path)
    ner_config = spacy.util.load_config(ROOT / "configs" / "ner_cpu.cfg", interpolate=False)
    with pytest.raises(ValueError, match=r"\[E069\].*crf_ner.*0 crf_ner components.*crf_tagger"):
        teacher_components(teacher, ner_config)
    parser_config = spacy.util.load_config(ROOT / "configs" / "cpu.cfg", interpolate=False)
    parser_config["nlp"]["pipeline"] = ["parser", "crf_tagger"]
    parser_config["components"]["parser"] = {"factory": "parser"}
    with pytest.raises(ValueError, match=r"\[E069\].*'parser'.*cannot be distilled"):
        teacher_components(teacher, parser_config)
    config = spacy.util.load_config(ROOT / "configs" / "cpu.cfg", interpolate=False)
    assert list(teacher_components(teacher, config)) == ["crf_tagger"]


def test_cached_scores_of_other_docs_are_refused():
    arrays = {
        "emissions": numpy.zeros((3, 2), dtype="float32"),
        "offsets": numpy.asarray([0, 3]),
        "transitions": numpy.zeros((2, 2), dtype="float32"),
        "start": numpy.zeros(2, dtype="float32"),
        "end": numpy.zeros(2, dtype="float32"),
    }
    teacher = CachedTeacher(["A", "B"], arrays, "crf_tagger")
    nlp = spacy.blank("en")
    doc = nlp.make_doc("one two three")
    doc.user_data["spacy_crf.distill_index"] = 0
    assert isinstance(teacher.teacher_scores([doc]), TeacherScores)
    with pytest.raises(ValueError, match=r"\[E070\].*not one of the training docs"):
        teacher.teacher_scores([nlp.make_doc("one two three")])
    short = nlp.make_doc("one two")
    short.user_data["spacy_crf.distill_index"] = 0
    with pytest.raises(ValueError, match=r"\[E070\].*another length"):
        teacher.teacher_scores([short])


def test_a_damaged_cache_is_refused(teacher_path, tmp_path):
    args = arguments(teacher_path, tmp_path, tmp_path / "student")
    output = tmp_path / "student"
    (output / "teacher_scores").mkdir(parents=True)
    # a cache whose meta claims this teacher and these docs, and whose scores are not a zip
    teacher = spacy.load(teacher_path)
    write_docbin(tmp_path / "train.spacy")
    config = spacy.util.load_config(
        ROOT / "configs" / "cpu.cfg",
        overrides={"paths.train": str(tmp_path / "train.spacy"), "paths.dev": str(tmp_path / "train.spacy")},
        interpolate=False,
    )
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    docs = [eg.reference for eg in training_examples(nlp, [])]
    teachers = teacher_components(teacher, config)
    fingerprint = distill_command.teacher_fingerprint(teacher, teachers, docs)
    srsly.write_json(output / "teacher_scores" / "meta.json", {"fingerprint": fingerprint, "tags": {"crf_tagger": []}})
    (output / "teacher_scores" / "crf_tagger.npz").write_bytes(b"not a zip")
    assert main(args) == 1
    with pytest.raises(ValueError, match=r"\[E070\].*unreadable"):
        distill_command.cached_teachers(teacher, teachers, docs, output / "teacher_scores")
    assert json.loads((output / "teacher_scores" / "meta.json").read_text())["fingerprint"] == fingerprint


@pytest.mark.slow
def test_a_students_shared_tok2vec_learns_through_its_listener(teacher_path, tmp_path):
    config = spacy.util.load_config(ROOT / "configs" / "cpu.cfg", interpolate=False)
    config["nlp"]["pipeline"] = ["tok2vec", "crf_tagger"]
    tok2vec = {
        "@architectures": "spacy.HashEmbedCNN.v2",
        "pretrained_vectors": None,
        "width": 32,
        "depth": 1,
        "embed_size": 500,
        "window_size": 1,
        "maxout_pieces": 2,
        "subword_features": True,
    }
    config["components"]["tok2vec"] = {"factory": "tok2vec", "model": tok2vec}
    config["components"]["crf_tagger"]["model"]["tok2vec"] = {
        "@architectures": "spacy.Tok2VecListener.v1",
        "width": 32,
        "upstream": "*",
    }
    config.to_disk(tmp_path / "shared.cfg")
    args = arguments(teacher_path, tmp_path, tmp_path / "student")
    args[2] = str(tmp_path / "shared.cfg")
    assert main(args) == 0
    evaluations = srsly.read_json(tmp_path / "student" / "checkpoint" / "state.json")["evaluations"]
    # spaCy's tok2vec loss sums the gradients its listeners pass up: the distillation's reached it
    assert evaluations[-1]["losses"]["tok2vec"] > 0.0 and evaluations[-1]["losses"]["crf_tagger"] > 0.0
    student = spacy.load(tmp_path / "student" / "model-last")
    assert student.pipe_names == ["tok2vec", "crf_tagger"]
    assert len(student("I like green eggs .")) == 5
