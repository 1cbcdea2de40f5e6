"""The benchmark harness (benchmarks/project.yml, run as `spacy project run
... benchmarks`) end to end: its `morph` workflow and `udpipe` on a tiny
Turkish-like treebank with multiword tokens (its own file, so that a parallel
test run gives it a worker of its own: see docs/development.md)."""

import json
import sys

import pytest

from ..project.test_template import (
    TURKISH,
    TURKISH_UNSEEN,
    copy_project,
    morph_conllu,
    project_run,
    run,
    words_of,
)

TREEBANK_VARS = [
    "--vars.treebank_name",
    "tr_tiny",
    "--vars.train_name",
    "tr_tiny-ud-train",
    "--vars.dev_name",
    "tr_tiny-ud-dev",
]


@pytest.fixture(scope="module")
def morph_project(tmp_path_factory):
    """A copy of the project whose harness ran the `morph` workflow on a tiny
    Turkish-like treebank, and the treebank's folder."""
    root = copy_project(tmp_path_factory)
    treebank = tmp_path_factory.mktemp("treebank_tr")
    (treebank / "tr_tiny-ud-train.conllu").write_text(morph_conllu(TURKISH * 6), encoding="utf8")
    (treebank / "tr_tiny-ud-dev.conllu").write_text(morph_conllu(TURKISH + [TURKISH_UNSEEN]), encoding="utf8")
    project_run(
        root,
        "morph",
        "--vars.lang",
        "tr",
        "--vars.treebank_dir",
        str(treebank),
        *TREEBANK_VARS,
        "--vars.max_steps",
        "6",
        "--vars.n_sents",
        "2",
        "--vars.benchmark_repeats",
        "1",
        project_dir="benchmarks",
    )
    return root, treebank


@pytest.mark.slow
def test_harness_morph_workflow_on_a_turkish_treebank(morph_project):
    """`morph` on a non-English treebank with multiword tokens: both systems
    trained as Turkish pipelines on the syntactic words, scored, timed,
    tabled; the harness's paths are the repository root's."""
    morph_project, _ = morph_project
    metrics = morph_project / "metrics" / "morph" / "tr_tiny"
    dev_words = words_of(TURKISH + [TURKISH_UNSEEN])  # the multiword tokens' words, not the tokens
    for config in ("cpu_morph", "baseline_pos"):
        scores = json.loads((metrics / f"{config}.json").read_text())
        assert 0.0 <= scores["pos_acc"] <= 1.0 and 0.0 <= scores["morph_acc"] <= 1.0
        bundles = json.loads((metrics / f"{config}-bundles.json").read_text())
        assert bundles["words"] == dev_words
        # the same definition as spacy evaluate's
        assert bundles["pos_acc"] == pytest.approx(scores["pos_acc"])
        assert bundles["morph_acc"] == pytest.approx(scores["morph_acc"])
        assert 0.0 <= bundles["pos_morph_acc"] <= min(bundles["pos_acc"], bundles["morph_acc"])
        speed = json.loads((metrics / f"{config}-speed.json").read_text())
        assert speed["words_per_second"] > 0 and speed["n_words"] == dev_words
        model = morph_project / "training" / "morph" / "tr_tiny" / config
        assert json.loads((model / "train_time.json").read_text())["train_seconds"] > 0
        meta = json.loads((model / "model-best" / "meta.json").read_text())
        assert meta["lang"] == "tr" and (config != "cpu_morph" or meta["pipeline"] == ["crf_morphologizer"])
        raw = json.loads((metrics / f"{config}-raw.json").read_text())
        for kind in ("gold_sentences", "gold_docs", "raw", "raw_by_sentence"):
            assert 0.0 <= raw[kind]["pos_acc"] <= 100.0 and 0.0 <= raw[kind]["morph_acc"] <= 100.0
        assert raw["gold_sentences"]["pos_acc"] == pytest.approx(100 * scores["pos_acc"], abs=0.01)
    for name in ("pos", "morph", "pos+morph"):
        paired = json.loads((metrics / f"paired_{name}.json").read_text())
        assert paired["tokens"] == dev_words and paired["mcnemar_chi2"] >= 0
    for config in ("cpu_morph", "baseline_pos"):
        errors = json.loads(
            (morph_project / "metrics" / "analysis" / f"morph_errors_tr_tiny_{config}.json").read_text()
        )
        # the tokens and the whole-feature-set accuracy of spacy evaluate's morph_acc
        morph_acc = json.loads((metrics / f"{config}.json").read_text())["morph_acc"]
        assert errors["tokens"] == dev_words and errors["feats_accuracy"] == pytest.approx(100 * morph_acc, abs=0.01)
        assert errors["feats_errors"] == round((1 - morph_acc) * dev_words)
        assert errors["feats_only"] <= errors["feats_errors"] and errors["with_pos_error"] <= errors["feats_errors"]
        assert errors["with_tag_error"] is None  # neither pos+morph model predicts tags
    crf_scores = json.loads((metrics / "cpu_morph.json").read_text())
    crf_bundles = json.loads((metrics / "cpu_morph-bundles.json").read_text())
    assert crf_bundles["pos_morph_acc"] == pytest.approx(crf_scores["pos_morph_acc"])
    unseen = json.loads((metrics / "unseen_bundles.json").read_text())
    assert unseen["dev_words"] == dev_words and unseen["unseen_words"] == 1
    table = run([sys.executable, "-m", "benchmarks.morph_table", "metrics"], cwd=morph_project).stdout
    assert "### tr_tiny" in table and f"{100 / dev_words:.2f}% of {dev_words} dev words" in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`configs/" in line]
    assert len(rows) == 2 and rows[0].startswith("| crf_") and rows[1].startswith("| spaCy morphologizer")
    assert all(" - " not in row for row in rows)  # every column filled
    assert (metrics / "table.md").read_text().strip() == table.strip()
    # the harness's lock file is its own, beside benchmarks/project.yml
    assert (morph_project / "benchmarks" / "project.lock").exists()
    assert not (morph_project / "project.lock").exists()


@pytest.mark.slow
def test_harness_udpipe_command_scores_the_same_dev_words(morph_project):
    """`project run udpipe benchmarks`: UDPipe 1's tagger on the same tiny
    treebank, its dev words the ones the morph workflow scores."""
    morph_project, treebank = morph_project
    project_run(morph_project, "udpipe", "--vars.treebank_dir", str(treebank), *TREEBANK_VARS, project_dir="benchmarks")
    result = json.loads((morph_project / "metrics" / "peers" / "udpipe_tr_tiny.json").read_text())
    bundles = json.loads((morph_project / "metrics" / "morph" / "tr_tiny" / "cpu_morph-bundles.json").read_text())
    assert result["treebank"] == "tr_tiny" and result["words"] == bundles["words"]
    assert 0.0 <= result["upos_feats"] <= min(result["upos"], result["ufeats"])


def test_every_benchmark_module_is_run_or_cited():
    """A harness that is only a harness: every module of benchmarks/ is a
    command of its project file, a module one of those imports, or cited by a
    docs page."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    modules = {path.stem for path in (root / "benchmarks").glob("*.py")} - {"__init__"}
    project = (root / "benchmarks" / "project.yml").read_text(encoding="utf8")
    used = set(re.findall(r"root\.py benchmarks\.(\w+)", project)) | {"root"}  # root.py runs them
    docs = "\n".join(path.read_text(encoding="utf8") for path in [root / "README.md", *(root / "docs").glob("*.md")])
    used |= set(re.findall(r"benchmarks\.(\w+)", docs)) & modules
    # and what those import, transitively
    todo = list(used)
    while todo:
        tree = ast.parse((root / "benchmarks" / f"{todo.pop()}.py").read_text(encoding="utf8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    names = [node.module] if node.module else [alias.name for alias in node.names]
                elif node.module and node.module.startswith("benchmarks."):
                    names = [node.module.split(".")[1]]
            for name in names:
                if name in modules and name not in used:
                    used.add(name)
                    todo.append(name)
    assert sorted(modules - used) == []
