"""The spaCy project template (project.yml) end to end on a tiny treebank and
a tiny Universal NER corpus, its packaged wheels in a fresh virtual
environment, the benchmark harness (benchmarks/project.yml) parsed, and the
harness's scripts. The morphologizer workflow and the harness's `morph`
workflow: tests/benchmarks/test_harness_project.py."""

import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
import spacy
from spacy.language import Language

ROOT = Path(__file__).parents[2]
PROJECT_FILES = ["project.yml", "configs", "scripts", "benchmarks"]

SENTENCES = [
    [
        ("I", "PRON", "PRP"),
        ("like", "VERB", "VBP"),
        ("green", "ADJ", "JJ"),
        ("eggs", "NOUN", "NNS"),
        (".", "PUNCT", "."),
    ],
    [("Eat", "VERB", "VB"), ("blue", "ADJ", "JJ"), ("ham", "NOUN", "NN"), ("!", "PUNCT", ".")],
    [
        ("They", "PRON", "PRP"),
        ("do", "AUX", "VBP"),
        ("n't", "PART", "RB"),
        ("eat", "VERB", "VB"),
        ("ham", "NOUN", "NN"),
    ],
]
# the FEATS of each XPOS in SENTENCES, for crf_morphologizer
FEATS = {
    "PRP": "PronType=Prs",
    "VBP": "Mood=Ind|Tense=Pres|VerbForm=Fin",
    "VB": "VerbForm=Inf",
    "JJ": "Degree=Pos",
    "NNS": "Number=Plur",
    "NN": "Number=Sing",
}
# (text, entities) for the rejected-spans experiment
NER_DATA = [
    ("Anna lives in New York City", [(0, 4, "PER"), (14, 27, "LOC")]),
    ("New York loves Anna Smith", [(0, 8, "LOC"), (15, 25, "PER")]),
    ("I like Berlin", [(7, 13, "LOC")]),
]
# Universal NER rows: (token, IOB2 tag); OTH is dropped by the conversion
ENTITY_SENTENCES = [
    [("Anna", "B-PER"), ("lives", "O"), ("in", "O"), ("New", "B-LOC"), ("York", "I-LOC"), ("City", "I-LOC")],
    [("New", "B-LOC"), ("York", "I-LOC"), ("loves", "O"), ("Anna", "B-PER"), ("Smith", "I-PER")],
    [("I", "O"), ("like", "O"), ("Berlin", "B-LOC"), ("and", "O"), ("Google", "B-ORG"), ("Maps", "B-OTH")],
]


def conllu(sentences):
    lines = []
    for n, sentence in enumerate(sentences):
        lines.append(f"# sent_id = s{n}")
        lines.append("# text = " + " ".join(word for word, _, _ in sentence))
        for i, (word, upos, xpos) in enumerate(sentence, start=1):
            head = 0 if i == 1 else 1
            deprel = "root" if i == 1 else "dep"
            feats = FEATS.get(xpos, "_")
            lines.append(f"{i}\t{word}\t{word.lower()}\t{upos}\t{xpos}\t{feats}\t{head}\t{deprel}\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


def iob2(sentences):
    """Universal NER's columns: index, token, tag, and two more."""
    lines = []
    for n, sentence in enumerate(sentences):
        lines.append(f"# sent_id = s{n}")
        lines.extend(f"{i}\t{word}\t{tag}\t-\t-" for i, (word, tag) in enumerate(sentence, start=1))
        lines.append("")
    return "\n".join(lines) + "\n"


def run(args, cwd, check=True, env=None):
    env = {**(os.environ if env is None else env), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def copy_project(tmp_path_factory):
    """A fresh copy of the project's files (no lock file: every command runs)."""
    root = tmp_path_factory.mktemp("project")
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("project.lock", "__pycache__"))
        else:
            shutil.copy(source, root / name)
    return root


def project_run(root, workflow, *args, project_dir="."):
    """`spacy project run`, by the venv's python without activating the venv:
    every step must use that interpreter, not the first `python` on PATH."""
    command = [sys.executable, "-m", "spacy", "project", "run", workflow, project_dir, *args]
    return run(command, cwd=root, env=unactivated_env())


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the project that ran the README's offline quickstart (`all`,
    the tagger, with --vars.treebank_dir) on a tiny treebank, the
    `morphologizer` workflow on the same treebank, the `ner` workflow with
    --vars.uner_dir on a tiny Universal NER corpus, and `package-spacy-crf`."""
    root = copy_project(tmp_path_factory)
    treebank = tmp_path_factory.mktemp("treebank")
    (treebank / "en_ewt-ud-train.conllu").write_text(conllu(SENTENCES * 8))
    (treebank / "en_ewt-ud-dev.conllu").write_text(conllu(SENTENCES * 2))
    uner = tmp_path_factory.mktemp("uner")
    (uner / "en_ewt-ud-train.iob2").write_text(iob2(ENTITY_SENTENCES * 8))
    (uner / "en_ewt-ud-dev.iob2").write_text(iob2(ENTITY_SENTENCES * 2))
    tiny = ["--vars.max_steps", "20", "--vars.n_sents", "2"]
    project_run(root, "all", "--vars.treebank_dir", str(treebank), *tiny)
    project_run(root, "morphologizer", "--vars.treebank_dir", str(treebank), *tiny)
    project_run(root, "ner", "--vars.uner_dir", str(uner), *tiny)
    project_run(root, "package-spacy-crf")
    return root


def unactivated_env():
    """os.environ as if the venv that runs the tests were not activated."""
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(path)
    return env


def test_timed_script_runs_python_with_its_own_interpreter(tmp_path):
    out = tmp_path / "time.json"
    code = "import sys, spacy; print(sys.executable)"
    result = run(
        [sys.executable, "-m", "benchmarks.timed", str(out), "--", "python", "-c", code],
        cwd=ROOT,
        env=unactivated_env(),
    )
    assert result.stdout.splitlines()[0] == sys.executable
    record = json.loads(out.read_text())
    assert record["train_seconds"] >= 0
    # the child imported spaCy: tens of MiB at least
    assert record["max_rss_mb"] > 10


@pytest.mark.slow
def test_workflow_all_trains_scores_and_packages_the_tagger(project):
    scores = json.loads((project / "metrics" / "cpu.json").read_text())
    assert 0.0 <= scores["tag_acc"] <= 1.0
    config = spacy.util.load_config(project / "training" / "cpu" / "model-best" / "config.cfg")
    assert config["nlp"]["pipeline"] == ["crf_tagger"] and config["training"]["max_steps"] == 20
    wheels = list((project / "packages").glob("*/dist/en_crf_tagger_ewt-0.1.0-py3-none-any.whl"))
    assert len(wheels) == 1
    meta = json.loads((project / "packages" / "en_crf_tagger_ewt-0.1.0" / "meta.json").read_text())
    assert any(req.startswith("spacy-crf") for req in meta["requirements"])


@pytest.mark.slow
def test_workflow_morphologizer_trains_scores_and_packages_the_morphologizer(project):
    """`morphologizer` after `all`, on the corpus `all` converted:
    crf_morphologizer on UPOS and FEATS."""
    scores = json.loads((project / "metrics" / "cpu_morph.json").read_text())
    assert 0.0 <= scores["pos_acc"] <= 1.0 and 0.0 <= scores["morph_acc"] <= 1.0
    nlp = spacy.load(project / "training" / "cpu_morph" / "model-best")
    assert nlp.pipe_names == ["crf_morphologizer"]
    assert any("Number=Plur" in label for label in nlp.get_pipe("crf_morphologizer").labels)
    assert list((project / "packages").glob("*/dist/en_crf_morphologizer_ewt-0.1.0-py3-none-any.whl"))


@pytest.mark.slow
def test_workflow_ner_trains_scores_and_packages_the_entity_recognizer(project):
    """UNER's OTH is dropped by the conversion; crf_ner learns PER, LOC, ORG."""
    scores = json.loads((project / "metrics" / "ner_cpu.json").read_text())
    assert 0.0 <= scores["ents_f"] <= 1.0
    assert set(scores.get("ents_per_type") or {}) <= {"PER", "LOC", "ORG"}
    nlp = spacy.load(project / "training" / "ner_cpu" / "model-best")
    # its labels are the entity types, as spaCy's ner lists them
    assert nlp.pipe_names == ["crf_ner"]
    assert nlp.get_pipe("crf_ner").labels == ("LOC", "ORG", "PER")
    assert list((project / "packages").glob("*/dist/en_crf_ner_ewt-0.1.0-py3-none-any.whl"))


@pytest.mark.slow
def test_missing_treebank_gives_a_clear_message(project, tmp_path):
    result = run(
        [
            sys.executable,
            "-m",
            "spacy",
            "project",
            "run",
            "convert",
            ".",
            "--vars.treebank_dir",
            str(tmp_path / "nowhere"),
            "--force",
        ],
        cwd=project,
        check=False,
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Corpus files not found" in output and "--vars.treebank_dir" in output
    assert "assets/sample" in output and "python -m spacy project assets ." in output
    assert "Traceback" not in output


def link_torch(venv):
    """This venv's torch, linked into the new venv's site-packages (with its
    dist-info, so that pip counts it installed): the CPU build, not a
    multi-GB CUDA download, and not a GiB copied on every run. pip installs
    everything else the wheels require."""
    import torch

    site = Path(torch.__file__).parent.parent
    target = next((venv / "lib").glob("python*/site-packages"))
    dist = next(site.glob("torch-*.dist-info"))
    for name in [*(dist / "top_level.txt").read_text().split(), dist.name]:
        (target / name).symlink_to(site / name)


@pytest.mark.slow
def test_packaged_models_load_in_a_fresh_venv(project, tmp_path):
    """pip install the wheels into a new venv; spacy.load finds the models."""
    [crf_wheel] = (project / "packages").glob("spacy_crf-*-py3-none-any.whl")  # built by `package-spacy-crf`
    model_wheels = sorted((project / "packages").glob("*/dist/*.whl"))
    assert len(model_wheels) == 3
    venv = tmp_path / "venv"
    # a venv without pip of its own: this pip installs into it (--python), and
    # leaves the bytecode to the first import (--no-compile)
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = str(venv / "bin" / "python")
    link_torch(venv)
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile"]
    run([*pip, str(crf_wheel), *map(str, model_wheels)], cwd=tmp_path)
    code = (
        "import spacy\n"
        "nlp = spacy.load('en_crf_tagger_ewt')\n"
        "doc = nlp('They like green eggs .')\n"
        "labels = set(nlp.get_pipe('crf_tagger').labels)\n"
        "assert len(doc) == 5 and all(t.tag_ in labels for t in doc), [t.tag_ for t in doc]\n"
        "morph = spacy.load('en_crf_morphologizer_ewt')('They like green eggs .')\n"
        "assert all(t.pos_ for t in morph), [t.pos_ for t in morph]\n"
        "ner = spacy.load('en_crf_ner_ewt')\n"
        "doc = ner('Anna lives in Berlin')\n"
        "assert all(e.label_ in {'PER', 'LOC', 'ORG'} for e in doc.ents), doc.ents\n"
        "print('TAGS', [t.tag_ for t in nlp('I like ham')], 'ENTS', [e.label_ for e in doc.ents])\n"
    )
    result = run([python, "-c", code], cwd=tmp_path)
    assert "TAGS" in result.stdout


def python_modules(command):
    """The modules a project command line runs: `python -m M` (the template),
    `python root.py M` (the harness), and `-- python -m M` after benchmarks.timed."""
    words = shlex.split(command)
    modules = []
    for i, word in enumerate(words[:-2]):
        if word == "python" and words[i + 1] in ("-m", "root.py"):
            modules.append(words[i + 2])
    return modules


def module_exists(module):
    top, _, rest = module.partition(".")
    if top in ("scripts", "benchmarks"):
        return (ROOT / top / f"{rest.replace('.', '/')}.py").is_file()
    return find_spec(module) is not None


@pytest.mark.parametrize("project_dir", [".", "benchmarks"])
def test_project_files_reference_existing_modules_configs_and_components(project_dir):
    """Every command of the template and of the harness runs a module that
    exists, names configs that exist, and overrides components those configs
    have; every workflow step is a command; every source file a command
    depends on exists (deps in corpus/, training/, metrics/ are outputs)."""
    from weasel.util import load_project_config

    folder = ROOT / project_dir
    project = load_project_config(folder)
    commands = {command["name"]: command for command in project["commands"]}
    for name, steps in project["workflows"].items():
        assert set(steps) <= set(commands), name
    prefix = "" if project_dir == "." else "../"
    for name, command in commands.items():
        assert command["script"], name
        for line in command["script"]:
            modules = python_modules(line)
            assert modules, line
            if project_dir == "benchmarks":
                assert line.startswith("python root.py "), line
            for module in modules:
                assert module_exists(module), (name, module)
            configs = re.findall(r"\bconfigs/(\w+)\.cfg", line)
            for config_name in configs:
                assert (ROOT / "configs" / f"{config_name}.cfg").is_file(), (name, config_name)
            for component in re.findall(r"--components\.(\w+)\.", line):
                config = spacy.util.load_config(ROOT / "configs" / f"{configs[0]}.cfg")
                assert component in config["nlp"]["pipeline"], (name, component, configs[0])
        for dep in command.get("deps", []):
            assert dep.startswith(prefix), (name, dep)
            path = dep[len(prefix) :]
            if path.split("/")[0] in ("scripts", "configs", "benchmarks"):
                assert (ROOT / path).exists(), (name, dep)
            else:
                assert path.split("/")[0] in ("corpus", "training", "metrics"), (name, dep)
        for output in command.get("outputs", []) + command.get("outputs_no_cache", []):
            assert output.startswith(prefix), (name, output)


def test_template_has_a_workflow_per_component_and_the_quickstart():
    """The README's quickstart (`project assets .`, `project run all .`, and
    its offline --vars.treebank_dir and --vars.max_steps) and one workflow
    per component, each convert -> train -> evaluate -> package."""
    from weasel.util import load_project_config

    project = load_project_config(ROOT)
    assert {"treebank_dir", "max_steps", "lang", "treebank", "train_name", "dev_name"} <= set(project["vars"])
    assert [asset["dest"] for asset in project["assets"]] == ["assets/UD_English-EWT", "assets/UNER_English-EWT"]
    workflows = project["workflows"]
    assert workflows["all"] == workflows["tagger"]
    for component, convert in [("tagger", "convert"), ("morphologizer", "convert"), ("ner", "convert-ner")]:
        assert workflows[component] == [convert, f"train-{component}", f"evaluate-{component}", f"package-{component}"]
    # the spacy-crf wheel needs a clone of spacy-crf (and pip's build tools): on request only
    assert not any("package-spacy-crf" in steps for steps in workflows.values())
    factories = {"tagger": "crf_tagger", "morphologizer": "crf_morphologizer", "ner": "crf_ner"}
    for component, factory in factories.items():
        config_name = project["vars"][f"{component}_config"]
        config = spacy.util.load_config(ROOT / "configs" / f"{config_name}.cfg")
        assert [config["components"][name]["factory"] for name in config["nlp"]["pipeline"]] == [factory]


def run_script(module, args, cwd, monkeypatch, capsys):
    """`python -m module args` in this process (no start-up): the JSON it prints."""
    main = importlib.import_module(module).main
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [module, *args])
    capsys.readouterr()
    main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_accuracy_scripts_on_the_trained_model(project, monkeypatch, capsys):
    """benchmarks.paired_test, benchmarks.accuracy_by_frequency and
    benchmarks.decoding_ablation read the same model and data."""
    model, train, dev = "training/cpu/model-best", "corpus/en_ewt-ud-train.spacy", "corpus/en_ewt-ud-dev.spacy"
    scores = json.loads((project / "metrics" / "cpu.json").read_text())
    paired = run_script("benchmarks.paired_test", [model, model, dev], project, monkeypatch, capsys)
    assert paired["tokens"] == 28 and paired["only_a_right"] == paired["only_b_right"] == 0
    assert paired["acc_a"] == pytest.approx(100 * scores["tag_acc"], abs=0.01)
    by_count = run_script(
        "benchmarks.accuracy_by_frequency", [model, train, dev, "--top", "100"], project, monkeypatch, capsys
    )
    buckets = by_count["by_training_count"]
    # the dev sentences are training sentences: each word was seen 8 or 16 times
    assert buckets["unseen"]["share"] == buckets["once"]["share"] == 0
    assert buckets["2-9"]["share"] + buckets["10+"]["share"] == 100 and by_count["tokens"] == 28
    assert by_count["accuracy"] == pytest.approx(paired["acc_a"], abs=0.01)
    assert sum(by_count["confusions"].values()) == buckets["2-9"]["errors"] + buckets["10+"]["errors"]
    args = [model, train, dev, "--min-counts", "1", "100"]
    decoding = run_script("benchmarks.decoding_ablation", args, project, monkeypatch, capsys)
    assert decoding["tokens"] == 28 and decoding["viterbi"] == paired["acc_a"]
    # no word was seen 100 times: that dictionary changes nothing
    assert decoding["dictionary_100"] == decoding["viterbi"]
    assert 0 <= decoding["marginal"] <= 100 and 0 <= decoding["dictionary_1"] <= 100


def results_table(root, capsys):
    """The lines benchmarks.results_table prints for root/metrics."""
    from benchmarks.results_table import main as print_results_table

    print_results_table(str(root / "metrics"))
    return capsys.readouterr().out.splitlines()


def test_results_table_names_ablations_by_their_overrides(tmp_path, capsys):
    """A metrics file without its own config is an ablation: the table gives
    the config and the overrides of the `spacy train` command that made it."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "cpu.cfg").write_text("")
    for name, extra in [("cpu", []), ("cpu_depth2", ["--components.crf_tagger.model.depth", "2"])]:
        (tmp_path / "training" / name).mkdir(parents=True)
        command = [
            "python",
            "-m",
            "spacy",
            "train",
            "configs/cpu.cfg",
            "--output",
            f"training/{name}",
            "--paths.train",
            "t.spacy",
            "--paths.dev",
            "d.spacy",
            *extra,
        ]
        (tmp_path / "training" / name / "train_time.json").write_text(
            json.dumps({"train_seconds": 600, "command": command})
        )
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "cpu.json").write_text(json.dumps({"tag_acc": 0.9463}))
    (tmp_path / "metrics" / "cpu_depth2.json").write_text(json.dumps({"tag_acc": 0.947}))
    table = results_table(tmp_path, capsys)
    assert table[2] == "| crf_tagger, CPU config | `configs/cpu.cfg` | 94.63 | - | 10.0 min | - |"
    assert (
        table[3]
        == "| crf_tagger, CPU config, 2 BiLSTM layers | `configs/cpu.cfg` depth = 2 | 94.70 | - | 10.0 min | - |"
    )


def test_results_table_gives_the_settings_a_run_used(tmp_path, capsys):
    """A run trained before its config file changed, or with overrides, is
    shown with the settings of the config spaCy saved beside its model."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "cpu.cfg").write_text("[paths]\ntrain = null\n\n[model]\nword_dropout = 0.25\ndepth = 1\n")
    for name, saved in [("cpu", "word_dropout = 0.05\ndepth = 1"), ("cpu_deep", "word_dropout = 0.25\ndepth = 2")]:
        (tmp_path / "training" / name / "model-best").mkdir(parents=True)
        (tmp_path / "training" / name / "model-best" / "config.cfg").write_text(
            f'[paths]\ntrain = "t.spacy"\n\n[model]\n{saved}\n'
        )
        command = ["python", "-m", "spacy", "train", "configs/cpu.cfg", "--output", f"training/{name}"]
        (tmp_path / "training" / name / "train_time.json").write_text(
            json.dumps({"train_seconds": None, "command": command})
        )
        (tmp_path / "metrics").mkdir(exist_ok=True)
        (tmp_path / "metrics" / f"{name}.json").write_text(json.dumps({"tag_acc": 0.95}))
    table = results_table(tmp_path, capsys)
    assert table[2] == "| crf_tagger, CPU config | `configs/cpu.cfg` word_dropout = 0.05 | 95.00 | - | - | - |"
    assert table[3] == "| cpu_deep | `configs/cpu.cfg` depth = 2 | 95.00 | - | - | - |"


def test_tag_dictionary_replaces_only_tags_a_frequent_word_never_had():
    """benchmarks.decoding_ablation's tag dictionary: a word seen min_count+ times keeps
    a tag it was seen with, else takes its most probable tag among those."""
    import collections

    import numpy

    from benchmarks.decoding_ablation import restrict_to_dictionary

    labels = ["DT", "NN", "VB", "NNP"]
    dictionary = {
        "the": collections.Counter(DT=5),
        "run": collections.Counter(NN=2, VB=3),
        "Zed": collections.Counter(NNP=1),
    }
    marginals = numpy.array(
        [
            [0.1, 0.6, 0.2, 0.1],  # "the": Viterbi NN, never seen -> DT, its only tag
            [0.0, 0.3, 0.1, 0.6],  # "run": Viterbi NNP, never seen -> NN (0.3 beats VB's 0.1)
            [0.0, 0.9, 0.0, 0.1],  # "Zed": seen once, below min_count: kept
            [0.0, 0.5, 0.5, 0.0],  # unseen word: kept
            [0.0, 0.2, 0.8, 0.0],  # "run" with a tag it had: kept
        ]
    )
    words = ["the", "run", "Zed", "blorp", "run"]
    viterbi = ["NN", "NNP", "NN", "VB", "VB"]
    assert restrict_to_dictionary(words, viterbi, marginals, labels, dictionary, 2) == ["DT", "NN", "NN", "VB", "VB"]
    assert restrict_to_dictionary(words, viterbi, marginals, labels, dictionary, 1)[2] == "NNP"
    assert restrict_to_dictionary(words, viterbi, marginals, labels, dictionary, 10) == viterbi


# Turkish-like sentences for the morph workflow: (ID, FORM, UPOS, FEATS), XPOS
# "_"; a "1-2" line is a multiword token, the lines after it its syntactic words
NOUN_LOC = "Case=Loc|Number=Sing|Person=3"
NOUN_ACC = "Case=Acc|Number=Sing|Person=3"
NOUN_NOM = "Case=Nom|Number=Sing|Person=3"
VERB_PAST_1 = "Aspect=Perf|Mood=Ind|Number=Sing|Person=1|Polarity=Pos|Tense=Past"
VERB_PAST_3 = "Aspect=Perf|Mood=Ind|Number=Sing|Person=3|Polarity=Pos|Tense=Past"
TURKISH = [
    [
        ("1-2", "Evdeki", "_", "_"),
        ("1", "Evde", "NOUN", NOUN_LOC),
        ("2", "ki", "ADP", "_"),
        ("3", "kitabı", "NOUN", NOUN_ACC),
        ("4", "okudum", "VERB", VERB_PAST_1),
        ("5", ".", "PUNCT", "_"),
    ],
    [
        ("1", "Ali", "PROPN", NOUN_NOM),
        ("2", "okula", "NOUN", "Case=Dat|Number=Sing|Person=3"),
        ("3", "gitti", "VERB", VERB_PAST_3),
        ("4", ".", "PUNCT", "_"),
    ],
    [
        ("1-2", "Masadaki", "_", "_"),
        ("1", "Masada", "NOUN", NOUN_LOC),
        ("2", "ki", "ADP", "_"),
        ("3", "kalem", "NOUN", NOUN_NOM),
        ("4", "kırmızı", "ADJ", "_"),
        ("5", ".", "PUNCT", "_"),
    ],
]
# a dev sentence with one bundle that train lacks (a plural noun)
TURKISH_UNSEEN = [
    ("1", "Kitaplar", "NOUN", "Case=Nom|Number=Plur|Person=3"),
    ("2", "kırmızı", "ADJ", "_"),
    ("3", ".", "PUNCT", "_"),
]


def morph_conllu(sentences):
    """CoNLL-U of (ID, FORM, UPOS, FEATS) rows: XPOS "_", the first word the root."""
    lines = []
    for n, rows in enumerate(sentences):
        lines.append(f"# sent_id = tr{n}")
        for id_, form, upos, feats in rows:
            if "-" in id_:
                lines.append(f"{id_}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_")
            else:
                head, deprel = ("0", "root") if id_ == "1" else ("1", "dep")
                lines.append(f"{id_}\t{form}\t{form.lower()}\t{upos}\t_\t{feats}\t{head}\t{deprel}\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


def words_of(sentences):
    return sum(1 for rows in sentences for id_, *_ in rows if id_.isdigit())


def test_raw_text_tags_each_sentence_as_a_doc_of_its_own():
    """benchmarks.raw_text's `raw_by_sentence`: the sentencizer's sentences go
    through the pipeline one doc each, and their annotations come back."""
    from benchmarks.raw_text import tag_by_sentence

    name = "test_position_tagger"
    if name not in Language.factories:

        @Language.component(name)
        def position_tagger(doc):
            for token in doc:
                token.tag_ = str(token.i)
                token.pos_ = "NOUN" if token.i == 0 else "X"
                token.set_morph(f"Number={'Sing' if token.i == 0 else 'Plur'}")
            return doc

    nlp = spacy.blank("tr")
    nlp.add_pipe(name)
    docs = tag_by_sentence(nlp, [nlp.make_doc("Bir iki. Üç dört beş! Altı"), nlp.make_doc("Yedi")])
    assert [t.tag_ for t in docs[0]] == ["0", "1", "2", "0", "1", "2", "3", "0"]
    assert [t.pos_ for t in docs[0]] == ["NOUN", "X", "X", "NOUN", "X", "X", "X", "NOUN"]
    assert [str(t.morph) for t in docs[1]] == ["Number=Sing"]
    assert [len(sent) for sent in docs[0].sents] == [3, 4, 1]


def test_unseen_bundles_counts_syntactic_words(tmp_path):
    """Multiword token lines are skipped; a bundle is UPOS + the set of features."""
    from benchmarks.unseen_bundles import unseen_bundle_rate

    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    train.write_text(morph_conllu(TURKISH), encoding="utf8")
    # the same features in another order are the same bundle
    reordered = [("1", "Ali", "PROPN", "Person=3|Case=Nom|Number=Sing"), ("2", ".", "PUNCT", "_")]
    dev.write_text(morph_conllu([TURKISH[0], reordered, TURKISH_UNSEEN]), encoding="utf8")
    result = unseen_bundle_rate(train, dev)
    assert result["train_words"] == words_of(TURKISH) == 14
    assert result["train_bundles"] == 10  # NOUN x4 (cases), VERB x2 (persons), ADP, PUNCT, PROPN, ADJ
    assert result["dev_words"] == 5 + 2 + 3
    assert result["unseen_words"] == result["unseen_bundles"] == 1
    assert result["unseen_rate"] == 10.0


def test_morph_table_reads_each_treebanks_files(tmp_path):
    """One table per treebank folder; pos_morph_acc from the bundle scores."""
    from benchmarks.morph_table import write_tables as write_morph_tables

    metrics = tmp_path / "metrics" / "morph" / "tr_x"
    metrics.mkdir(parents=True)
    files = {
        "cpu_morph.json": {"pos_acc": 0.9, "morph_acc": 0.85, "pos_morph_acc": 0.8},
        "cpu_morph-bundles.json": {"pos_acc": 0.9, "morph_acc": 0.85, "pos_morph_acc": 0.8, "words": 100},
        "cpu_morph-speed.json": {"words_per_second": 12345},
        "cpu_morph-raw.json": {
            "gold_docs": {"pos_acc": 89.5, "morph_acc": 84.0},
            "raw": {"pos_acc": 88.0, "morph_acc": 83.0},
        },
        "cpu_morph_full.json": {"pos_acc": 0.89, "morph_acc": 0.84},
        "cpu_morph_linear.json": {"pos_acc": 0.88, "morph_acc": 0.83},
        "baseline_pos.json": {"pos_acc": 0.91, "morph_acc": 0.8},
        "paired_pos.json": {
            "tokens": 100,
            "acc_a": 90.0,
            "acc_b": 91.0,
            "only_a_right": 3,
            "only_b_right": 4,
            "mcnemar_chi2": 0.0,
        },
        "paired_morph.json": {
            "tokens": 100,
            "acc_a": 85.0,
            "acc_b": 80.0,
            "only_a_right": 9,
            "only_b_right": 4,
            "mcnemar_chi2": 1.23,
        },
        "baseline_pos-bundles.json": {"pos_acc": 0.91, "morph_acc": 0.8, "pos_morph_acc": 0.75, "words": 100},
        "unseen_bundles.json": {
            "unseen_rate": 1.5,
            "dev_words": 2000,
            "unseen_bundles": 7,
            "dev_bundles": 300,
            "train_bundles": 900,
        },
    }
    for name, content in files.items():
        (metrics / name).write_text(json.dumps(content))
    (tmp_path / "training" / "morph" / "tr_x" / "baseline_pos").mkdir(parents=True)
    (tmp_path / "training" / "morph" / "tr_x" / "baseline_pos" / "train_time.json").write_text(
        json.dumps({"train_seconds": 90})
    )
    (tmp_path / "metrics" / "morph" / "hu_y").mkdir()
    lines = write_morph_tables(str(tmp_path / "metrics"))
    assert lines[lines.index("### tr_x") + 2].startswith(
        "Unseen UPOS+FEATS bundles: 1.50% of 2,000 dev words (7 of 300"
    )
    rows = [line for line in lines if "`configs/" in line]
    assert rows == [
        "| cpu_morph | `configs/cpu_morph.cfg` | 90.00 | 85.00 | 80.00 | 89.50 / 84.00 | 88.00 / 83.00 | - | 12,345 |",
        '| cpu_morph_full | `configs/cpu_morph.cfg`, transitions = "full" | 89.00 | 84.00 | - | - | - | - | - |',
        '| cpu_morph_linear | `configs/cpu_morph.cfg`, emissions = "full" | 88.00 | 83.00 | - | - | - | - | - |',
        "| baseline_pos | `configs/baseline_pos.cfg` | 91.00 | 80.00 | 75.00 | - | - | 1.5 min | - |",
    ]
    assert "| FEATS | 100 | 85.00 | 80.00 | 9 | 4 | 1.23 |" in lines
    assert lines.index("| UPOS | 100 | 90.00 | 91.00 | 3 | 4 | 0.00 |") < lines.index(
        "| FEATS | 100 | 85.00 | 80.00 | 9 | 4 | 1.23 |"
    )
    assert (metrics / "table.md").exists() and (tmp_path / "metrics" / "morph" / "hu_y" / "table.md").exists()


@pytest.mark.parametrize("lang", ["tr", "hu"])
def test_morph_configs_take_the_treebanks_language(lang):
    """`--nlp.lang` (the project's train commands) gives every CPU and baseline
    config a blank pipeline of that language; no download needed."""
    import spacy

    configs = sorted(p for p in (ROOT / "configs").glob("*.cfg") if p.name.startswith(("cpu", "baseline")))
    assert {p.name for p in configs} >= {"cpu_morph.cfg", "baseline_pos.cfg"}
    for path in configs:
        config = spacy.util.load_config(path, overrides={"nlp.lang": lang})
        nlp = spacy.util.load_model_from_config(config)
        assert nlp.lang == lang, path.name
        assert [t.text for t in nlp.make_doc("Evdeki kitabı okudum.")][-1] == "."


@pytest.mark.slow
def test_rejected_spans_experiment_runs_end_to_end(tmp_path):
    """benchmarks.rejected_spans on a tiny entity corpus: real trainings (the
    weak model, then two arms going on from it), every run's scores, the
    means, the gains and the setup in its JSON; the answers split the weak
    model's proposals. (Training every arm anew runs the same `spacy train` as
    the weak model, with the arm's data; means over seeds: the test below.)"""
    start, seeds = "weak", ["3"]
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    nlp = spacy.blank("en")
    docs = [Example.from_dict(nlp.make_doc(text), {"entities": ents}).reference for text, ents in NER_DATA * 4]
    DocBin(docs=docs).to_disk(tmp_path / "train.spacy")
    DocBin(docs=docs[:3]).to_disk(tmp_path / "dev.spacy")
    output = tmp_path / "result.json"
    run(
        [
            sys.executable,
            "-m",
            "benchmarks.rejected_spans",
            str(tmp_path / "train.spacy"),
            str(tmp_path / "dev.spacy"),
            "--config",
            str(ROOT / "configs" / "ner.cfg"),
            "--annotated",
            "0.25",
            "--weak-steps",
            "4",
            "--steps",
            "4",
            "--arms",
            "accepted",
            "accepted+rejected",
            "--start",
            start,
            "--seeds",
            *seeds,
            "--workdir",
            str(tmp_path / "work"),
            "--output",
            str(output),
        ],
        cwd=ROOT,
    )
    record = json.loads(output.read_text())
    assert record["train_docs"] == 12 and record["annotated_docs"] == 3 and record["answered_docs"] == 9
    assert record["start"] == start
    assert record["accepted_spans"] <= 15 and record["gold_entities_in_answered_docs"] == 15
    assert 0.0 <= record["weak_model"]["ents_f"] <= 100.0
    assert set(record["arms"]) == set(record["runs"]) == {"accepted", "accepted+rejected"}
    assert record["seeds"] == [int(seed) for seed in seeds]
    for arm, runs in record["runs"].items():
        assert [trained["seed"] for trained in runs] == record["seeds"]
        for trained in runs:
            assert 0.0 <= trained["best"]["ents_f"] <= 100.0 and 0.0 <= trained["last"]["ents_f"] <= 100.0
        mean = sum(trained["best"]["ents_f"] for trained in runs) / len(seeds)
        assert record["arms"][arm]["ents_f"] == pytest.approx(mean, abs=0.011)
    runs = record["runs"]
    per_seed = [a["best"]["ents_f"] - b["best"]["ents_f"] for a, b in zip(runs["accepted+rejected"], runs["accepted"])]
    gain = record["ents_f_gain"]["rejections_beside_accepts"]
    assert gain["per_seed"] == pytest.approx(per_seed, abs=0.011)
    assert gain["mean"] == pytest.approx(sum(per_seed) / len(seeds), abs=0.011)
    assert set(record["ents_f_gain_last"]) == {"rejections_beside_accepts"}
    carried = DocBin().from_disk(tmp_path / "work" / "accepted+rejected.spacy").get_docs(nlp.vocab)
    answered = list(carried)[3:]
    assert sum(len(doc.ents) for doc in answered) == record["accepted_spans"]
    assert sum(len(doc.spans["incorrect_spans"]) for doc in answered) == record["rejected_spans"]


def test_rejected_spans_means_and_gains_over_seeds():
    from benchmarks.rejected_spans import gains, mean_scores

    def run(seed, best, last):
        return {"seed": seed, "best": {"ents_f": best, "ents_p": best}, "last": {"ents_f": last, "ents_p": last}}

    runs = {
        "accepted": [run(0, 40.0, 30.0), run(1, 42.0, 35.0)],
        "accepted+rejected": [run(0, 43.0, 29.0), run(1, 42.5, 36.0)],
        "annotated": [run(0, 10.0, 10.0), run(1, 10.0, 10.0)],
    }
    assert mean_scores(r["best"] for r in runs["accepted"]) == {"ents_f": 41.0, "ents_p": 41.0}
    assert gains(runs, "best") == {"rejections_beside_accepts": {"mean": 1.75, "per_seed": [3.0, 0.5]}}
    assert gains(runs, "last") == {"rejections_beside_accepts": {"mean": 0.0, "per_seed": [-1.0, 1.0]}}


def test_answers_split_the_proposals_into_accepted_and_rejected():
    """benchmarks.rejected_spans.answers/with_answers: proposals that are gold
    entities are accepted, the others rejected; the answered doc's other
    tokens are unknown."""
    import spacy
    from spacy.tokens import Span

    from benchmarks.rejected_spans import KEY, answers, with_answers

    nlp = spacy.blank("en")
    gold = nlp.make_doc("Ada Lovelace met Charles Babbage in London")
    gold.ents = [Span(gold, 0, 2, "PER"), Span(gold, 3, 5, "PER"), Span(gold, 6, 7, "LOC")]

    def weak(doc):
        doc.ents = [Span(doc, 0, 2, "PER"), Span(doc, 3, 4, "PER"), Span(doc, 6, 7, "ORG")]
        return doc

    weak_nlp = type("Weak", (), {"pipe": lambda self, docs: (weak(d) for d in docs)})()
    [(accepted, rejected)] = answers(weak_nlp, [gold])
    assert [(s.start, s.end, s.label_) for s in accepted] == [(0, 2, "PER")]
    assert [(s.start, s.end, s.label_) for s in rejected] == [(3, 4, "PER"), (6, 7, "ORG")]
    doc = with_answers(gold, accepted, rejected)
    assert [t.ent_iob_ for t in doc] == ["B", "I", "", "", "", "", ""]
    assert [(s.start, s.end, s.label_) for s in doc.spans[KEY]] == [(3, 4, "PER"), (6, 7, "ORG")]


def test_continued_config_sources_the_weak_model_with_the_rejections_key(tmp_path):
    """benchmarks.rejected_spans.continued_config: the arms' config sources the
    weak model's entity recognizer (configs/ner.cfg's one component), and the
    sourced copy reads incorrect_spans_key from its config; the weak model is
    untouched."""
    import spacy
    from spacy.training import Example

    from benchmarks.rejected_spans import KEY, continued_config

    ner_config = spacy.util.load_config(ROOT / "configs" / "ner.cfg")
    [name] = ner_config["nlp"]["pipeline"]
    nlp = spacy.blank("en")
    nlp.add_pipe(ner_config["components"][name]["factory"], name=name)
    examples = [Example.from_dict(nlp.make_doc(text), {"entities": ents}) for text, ents in NER_DATA]
    nlp.initialize(lambda: examples)
    nlp.to_disk(tmp_path / "weak")
    path = continued_config(str(ROOT / "configs" / "ner.cfg"), tmp_path / "weak", tmp_path)
    config = spacy.util.load_config(path)
    assert dict(config["components"][name]) == {"source": str((tmp_path / "weak-source").resolve())}
    sourced = spacy.load(tmp_path / "weak-source")
    assert sourced.get_pipe(name).cfg["incorrect_spans_key"] == KEY
    assert spacy.load(tmp_path / "weak").get_pipe(name).cfg["incorrect_spans_key"] is None
