"""The project's `distill` workflow on a tiny treebank: a transformer
crf_tagger (on the tiny encoder scripts.tiny_encoder builds) distilled into
the CPU config, both scored, the student packaged; the student loads and
tags without the teacher."""

import json

import pytest
import spacy

from .test_template import SENTENCES, conllu, copy_project, project_run

pytest.importorskip("transformers")
pytest.importorskip("spacy_transformers")


@pytest.mark.slow
def test_distill_workflow_trains_the_teacher_distils_scores_and_packages_the_student(tmp_path_factory):
    root = copy_project(tmp_path_factory)
    treebank = tmp_path_factory.mktemp("treebank")
    (treebank / "en_ewt-ud-train.conllu").write_text(conllu(SENTENCES * 8))
    (treebank / "en_ewt-ud-dev.conllu").write_text(conllu(SENTENCES * 2))
    steps = ["--vars.teacher_steps", "6", "--vars.student_steps", "6", "--vars.distill_eval_frequency", "3"]
    project_run(root, "distill", "--vars.treebank_dir", str(treebank), "--vars.n_sents", "2", *steps)
    teacher = json.loads((root / "metrics" / "teacher.json").read_text())
    student = json.loads((root / "metrics" / "student.json").read_text())
    assert 0.0 <= teacher["tag_acc"] <= 1.0 and 0.0 <= student["tag_acc"] <= 1.0
    assert (root / "training" / "student" / "teacher_scores" / "meta.json").exists()
    nlp = spacy.load(root / "training" / "student" / "model-best")
    assert nlp.pipe_names == ["crf_tagger"]  # no transformer: the student runs without the teacher
    assert (
        nlp.get_pipe("crf_tagger").labels
        == spacy.load(root / "training" / "teacher" / "model-best").get_pipe("crf_tagger").labels
    )
    assert len(nlp("I like green eggs")) == 4
    assert list((root / "packages").glob("*/dist/en_crf_tagger_ewt_distilled-0.1.0-py3-none-any.whl"))
