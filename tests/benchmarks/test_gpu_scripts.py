"""The GPU benchmark scripts run (on CPU here): what they measure is right in kind."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import SENTENCES, write_docbin

ROOT = Path(__file__).parents[2]


def run(module, *args):
    """`python -m benchmarks.<module> args` from the repository root; its stdout."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", f"benchmarks.{module}", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "small.spacy"
    write_docbin(path)
    return path


def test_gpu_benchmark_smoke_test_without_a_gpu():
    pytest.importorskip("triton", minversion="3.0")
    out = run("gpu", "--interpret")
    assert "same paths and NLL as the torch path" in out


def test_train_steps_times_spacys_training_loop(corpus, tmp_path):
    output = tmp_path / "steps.json"
    run(
        "train_steps",
        ROOT / "configs/cpu.cfg",
        corpus,
        corpus,
        "--steps",
        8,
        "--warmup",
        3,
        "--save",
        tmp_path / "model",
        "--profile",
        tmp_path / "profile.txt",
        "--output",
        output,
    )
    result = json.loads(output.read_text())
    assert result["steps"] == 5 and result["steps_per_second"] > 0 and result["words_per_second"] > 0
    assert (tmp_path / "model" / "crf_tagger").is_dir()
    assert "spacy_crf" in (tmp_path / "profile.txt").read_text()


def test_gpu_stages_on_cpu(corpus, tmp_path):
    output = tmp_path / "stages.json"
    run(
        "gpu_stages",
        corpus,
        "--config",
        ROOT / "configs/cpu.cfg",
        "--init-corpus",
        corpus,
        "--gpu-id",
        -1,
        "--repeats",
        2,
        "--output",
        output,
    )
    result = json.loads(output.read_text())
    assert set(result["ms"]) == {"tok2vec", "tok2vec + network", "decode (Viterbi)", "predict", "set_annotations"}
    assert result["n_words"] == 3 * sum(len(words) for words, _ in SENTENCES)


def test_contention_measures_every_system_in_every_condition(corpus, tmp_path):
    output = tmp_path / "contention.json"
    out = run(
        "contention",
        corpus,
        corpus,
        "--init-sentences",
        6,
        "--pipe-sentences",
        6,
        "--batch-size",
        2,
        "--updates",
        1,
        "--warmup",
        1,
        "--repeats",
        1,
        "--conditions",
        "quiet",
        "busy",
        "--output",
        output,
    )
    result = json.loads(output.read_text())
    systems = ["crf_tagger (threads = 0, auto)", "spaCy tagger"]
    assert [s for s in systems if s in result["results"]] == systems and len(result["results"]) == 3
    for workloads in result["results"].values():
        for by_kind in workloads.values():
            assert set(by_kind) == {"quiet", "busy"}
            assert all(run["median"] > 0 for run in by_kind.values())
    assert result["environment"]["logical_cpus"] >= 1
    assert "| spaCy tagger | train updates/s |" in out


def test_large_labels_times_every_operation():
    """Every operation for both transition matrices, measured in this process
    (the script runs each in a process of its own: the test below)."""
    from benchmarks.large_labels import OPERATIONS, measure, table

    rows = [measure(op, k, 2, 3, 1, 1, kind) for op in OPERATIONS for k in (3, 5) for kind in ("full", "factored")]
    assert all(r["ms"] > 0 for r in rows)
    lines = table(rows).splitlines()
    assert len(lines) == 2 + 4 and "| 5 | factored |" in table(rows)
    assert "not run" not in table(rows) and all(line.endswith("% |") for line in lines[2:])


def test_large_labels_runs_each_operation_in_its_own_process(tmp_path):
    output = tmp_path / "large.json"
    out = run(
        "large_labels",
        "--labels",
        5,
        "--transitions",
        "factored",
        "--operations",
        "viterbi",
        "nbest_5",
        "--batch",
        2,
        "--length",
        3,
        "--repeats",
        1,
        "--output",
        output,
    )
    rows = json.loads(output.read_text())["rows"]
    assert [(r["operation"], r["labels"], r["transitions"]) for r in rows] == [
        ("viterbi", 5, "factored"),
        ("nbest_5", 5, "factored"),
    ]
    assert all(r["ms"] > 0 and r["peak_mb"] >= 0 for r in rows)
    # operations not run say so; the Viterbi share needs the BiLSTM's time
    assert "| 5 | factored |" in out and "not run" in out and out.rstrip().endswith("| - |")


def test_time_to_accuracy_stamps_every_evaluation(corpus, tmp_path):
    output, image = tmp_path / "tta.json", tmp_path / "tta.png"
    run(
        "time_to_accuracy",
        f"crf={ROOT / 'configs/cpu.cfg'}",
        "--train",
        corpus,
        "--dev",
        corpus,
        "--workdir",
        tmp_path / "work",
        "--output",
        output,
        "--plot",
        image,
        "--",
        "--training.max_steps",
        4,
        "--training.eval_frequency",
        2,
    )
    result = json.loads(output.read_text())
    assert result["score"] == "tag_acc" and result["threads"] == 1
    assert image.stat().st_size > 0
    # a run with its own overrides, merged into the same JSON
    run(
        "time_to_accuracy",
        f"spacy={ROOT / 'configs/baseline.cfg'},training.max_steps=2,training.eval_frequency=1",
        "--train",
        corpus,
        "--dev",
        corpus,
        "--workdir",
        tmp_path / "work",
        "--output",
        output,
        "--merge",
    )
    result = json.loads(output.read_text())
    assert set(result["runs"]) == {"crf", "spacy"}
    assert result["runs"]["crf"]["args"] == ["--training.max_steps", "4", "--training.eval_frequency", "2"]
    assert result["runs"]["spacy"]["args"] == ["--training.max_steps", "2", "--training.eval_frequency", "1"]
    for name, steps in (("crf", [0, 2, 4]), ("spacy", [0, 1, 2])):
        points = result["runs"][name]["points"]
        assert [p["step"] for p in points] == steps
        assert all(0.0 <= p["score"] <= 100.0 for p in points)
        assert [p["seconds"] for p in points] == sorted(p["seconds"] for p in points)
        assert result["runs"][name]["seconds"] >= points[-1]["seconds"]


def test_time_to_accuracy_table_times_every_run_against_the_bars(tmp_path):
    from benchmarks.time_to_accuracy import main as time_to_accuracy

    def run_of(scores, seconds):
        return {
            "points": [{"seconds": s, "step": i, "score": v} for i, (s, v) in enumerate(zip(seconds, scores))],
            "seconds": seconds[-1] + 1,
            "best": max(scores),
            "final": scores[-1],
        }

    output, peer = tmp_path / "tta.json", tmp_path / "peer.json"
    output.write_text(
        json.dumps(
            {
                "score": "tag_acc",
                "threads": 1,
                "runs": {
                    "slow": {"config": "a.cfg", "args": [], **run_of([90.0, 94.0, 95.0], [60, 600, 1199])},
                    "base": {"config": "b.cfg", "args": [], **run_of([92.0, 93.0], [30, 119])},
                },
            }
        )
    )
    peer.write_text(json.dumps({**run_of([91.0, 94.95], [100, 200]), "settings_text": "Flair"}))
    time_to_accuracy(
        [
            "--train",
            "t",
            "--dev",
            "d",
            "--output",
            str(output),
            "--merge",
            "--peer",
            f"peer={peer}",
            "--baseline",
            "base",
            "--reference",
            "slow",
        ]
    )
    record = json.loads(output.read_text())
    assert set(record["runs"]) == {"slow", "base", "peer"} and record["environment"]["torch"]
    from benchmarks.time_to_accuracy import table

    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in table(record).splitlines()[2:]
    }
    # bars: base's best 93.00; slow's best - 0.1 = 94.90
    assert rows["slow"][-2:] == ["10.0 min (50%)", "20.0 min (100%)"]
    assert rows["base"][-2:] == ["2.0 min (10%)", "never"]
    assert rows["peer"][0] == "Flair" and rows["peer"][-1] == "3.3 min (17%)"


def test_time_to_accuracy_run_specs():
    from benchmarks.time_to_accuracy import parse_run

    assert parse_run("a=c.cfg") == ("a", "c.cfg", [])
    assert parse_run("a=c.cfg,training.max_steps=5") == ("a", "c.cfg", ["--training.max_steps", "5"])
    with pytest.raises(ValueError):
        parse_run("a=c.cfg,oops")


def test_time_to_accuracy_reads_the_loggers_rows():
    from benchmarks.time_to_accuracy import header_columns, parse_row, time_to

    columns = header_columns("E    #       LOSS CRF_T...  TAG_ACC  SCORE ")
    assert columns == ["E", "#", "LOSS CRF_T...", "TAG_ACC", "SCORE"]
    assert parse_row("  1     500      142616.07    85.38    0.85", columns, "tag_acc") == {"step": 500, "score": 85.38}
    assert parse_row("  1     500      142616.07    85.38    0.85", columns, "pos_acc") == {"step": 500, "score": 85.0}
    assert parse_row("✔ Saved pipeline to output directory", columns, "tag_acc") is None
    run_ = {"points": [{"seconds": 10.0, "score": 80.0}, {"seconds": 20.0, "score": 90.0}]}
    assert time_to(run_, 85.0) == 20.0 and time_to(run_, 95.0) is None


# a CoNLL-U with what the peers benchmark must skip: comments, a multiword
# token's range (1-2) and an empty node (3.1)
CONLLU_SENTENCE = """# sent_id = {i}
# text = I can't eat green eggs
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\tcan\tAUX\tMD\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\teat\teat\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tate\teat\tVERB\tVBD\t_\t_\t_\t4:conj\t_
5\tgreen\tgreen\tADJ\tJJ\t_\t6\tamod\t_\t_
6\teggs\tegg\tNOUN\tNNS\t_\t4\tobj\t_\t_

"""


def test_peers_reads_conllu(tmp_path):
    from benchmarks.peers import read_conllu

    path = tmp_path / "small.conllu"
    path.write_text(CONLLU_SENTENCE.format(i=1) + CONLLU_SENTENCE.format(i=2))
    words = ["I", "ca", "n't", "eat", "green", "eggs"]
    assert read_conllu(path, "xpos") == [(words, ["PRP", "MD", "RB", "VB", "JJ", "NNS"])] * 2
    assert read_conllu(path, "upos")[0][1] == ["PRON", "AUX", "PART", "VERB", "ADJ", "NOUN"]
    path.write_text(CONLLU_SENTENCE.format(i=1).replace("\tNNS\t", "\tO\t"))
    with pytest.raises(ValueError, match=r"\[E202\]"):
        read_conllu(path, "xpos")


def test_peers_spacy_model_specs_carry_config_overrides():
    from benchmarks.peers import parse_spacy_model

    assert parse_spacy_model("crf=training/cpu/model-best") == ("crf", "training/cpu/model-best", {})
    name, path, overrides = parse_spacy_model(
        "crf_int8=model,components.crf_tagger.quantize=int8,components.crf_tagger.threads=1"
    )
    assert (name, path) == ("crf_int8", "model")
    assert overrides == {"components": {"crf_tagger": {"quantize": "int8", "threads": 1}}}
    for bad in ("model", "=model", "crf=model,quantize"):
        with pytest.raises(ValueError, match="NAME=PATH"):
            parse_spacy_model(bad)


def test_peers_without_flair_says_what_to_install(monkeypatch):
    from benchmarks.peers import import_flair

    monkeypatch.setitem(sys.modules, "flair", None)  # import flair raises ImportError
    with pytest.raises(ImportError, match=r"\[E201\].*pip install -e \"\.\[peers\]\""):
        import_flair()


def test_peers_trains_and_times_flairs_tagger(tmp_path):
    pytest.importorskip("flair")
    train, dev, output = tmp_path / "train.conllu", tmp_path / "dev.conllu", tmp_path / "flair.json"
    train.write_text("".join(CONLLU_SENTENCE.format(i=i) for i in range(12)))
    dev.write_text("".join(CONLLU_SENTENCE.format(i=i) for i in range(3)))
    # a crf_tagger that knows the sentence's tags, timed in turn with Flair
    from spacy.tokens import Doc
    from spacy.training import Example

    from ..helpers import make_nlp
    from ..helpers import train as train_nlp

    nlp = make_nlp()
    words, tags = ["I", "ca", "n't", "eat", "green", "eggs"], ["PRP", "MD", "RB", "VB", "JJ", "NNS"]
    train_nlp(nlp, [Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, tags=tags))], steps=30)
    nlp.to_disk(tmp_path / "crf")
    # two epochs asked, but --max-minutes 0 stops after the first
    out = run(
        "peers",
        "--train",
        train,
        "--dev",
        dev,
        "--column",
        "xpos",
        "--epochs",
        2,
        "--max-minutes",
        0,
        "--repeats",
        2,
        "--workdir",
        tmp_path / "work",
        "--output",
        output,
        "--spacy-model",
        f"crf={tmp_path / 'crf'}",
        "--spacy-model",
        f"crf_int8={tmp_path / 'crf'},components.crf_tagger.quantize=int8",
    )
    result = json.loads(output.read_text())
    assert "epoch 1: dev accuracy" in out
    assert result["flair"] and result["settings_text"].startswith("Flair ")
    assert result["settings"]["train_sentences"] == 12 and result["settings"]["dev_sentences"] == 3
    assert result["train_words"] == 12 * 6 and result["inference_words"] == 3 * 6
    [point] = result["points"]
    assert point["step"] == 1 and 0.0 <= point["score"] <= 100.0 and 0.0 < point["seconds"] <= result["seconds"]
    assert result["best"] == result["final"] == point["score"]
    # micro-F1 is token accuracy: Flair's own accuracy, and ours on the best (only) epoch's model
    assert result["flair_dev_accuracy"] == [round(point["score"], 2)]
    assert result["dev_accuracy"] == pytest.approx(point["score"], abs=1e-3)
    assert result["epochs_done"] == 1 and result["stopped_early"] is True and result["stop_reason"] == "max-minutes"
    assert result["train_words_per_second"] > 0 and result["pipe_words_per_second"] > 0
    assert len(result["inference_runs"]) == 2 and result["environment"]["torch"]
    assert (tmp_path / "work" / "model" / "final-model.pt").exists()
    sides = result["side_by_side"]
    assert set(sides) == {"flair", "crf", "crf_int8"} and all(len(side["runs"]) == 2 for side in sides.values())
    assert sides["crf"]["dev_accuracy"] == 100.0 and sides["flair"]["dev_accuracy"] == result["dev_accuracy"]
    assert sides["crf_int8"]["dev_accuracy"] == 100.0
    # --retime: the saved tagger timed again, the training figures kept
    run(
        "peers",
        "--train",
        train,
        "--dev",
        dev,
        "--column",
        "xpos",
        "--repeats",
        3,
        "--retime",
        "--batch-size",
        2,
        "--workdir",
        tmp_path / "work",
        "--output",
        output,
        "--spacy-model",
        f"crf={tmp_path / 'crf'}",
    )
    retimed = json.loads(output.read_text())
    assert retimed["retimed"] is True and len(retimed["inference_runs"]) == 3
    # the settings say how this timing ran, and still what was trained
    assert retimed["settings"] == {**result["settings"], "repeats": 3, "predict_batch_size": 2}
    assert set(retimed["side_by_side"]) == {"flair", "crf"} and retimed["dev_accuracy"] == result["dev_accuracy"]
    assert {k: retimed[k] for k in ("points", "seconds", "train_words_per_second", "flair_dev_accuracy")} == {
        k: result[k] for k in ("points", "seconds", "train_words_per_second", "flair_dev_accuracy")
    }


def test_peers_retime_needs_the_json_of_the_training_run(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(CONLLU_SENTENCE.format(i=0))
    command = [
        sys.executable,
        "-m",
        "benchmarks.peers",
        "--train",
        str(train),
        "--dev",
        str(train),
        "--retime",
        "--output",
        str(tmp_path / "missing.json"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "--retime needs --output" in done.stderr


def save_crf_and_tagger(corpus, folder, updates=0):
    """A small crf_tagger pipeline and a spaCy tagger pipeline, initialized on
    the corpus and updated `updates` times, saved to folder/crf and folder/spacy."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from ..helpers import SMALL_MODEL, make_nlp

    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    for name, nlp in (("crf", make_nlp(SMALL_MODEL)), ("spacy", spacy.blank("en"))):
        if name == "spacy":
            nlp.add_pipe("tagger")
        examples = [Example(nlp.make_doc(d.text), d) for d in docs]
        optimizer = nlp.initialize(get_examples=lambda examples=examples: examples)
        for _ in range(updates):
            nlp.update(examples, sgd=optimizer)
        nlp.to_disk(folder / name)
    return docs


def test_quantize_times_and_scores_float32_int8_bf16_and_spacys_tagger(corpus, tmp_path):
    from benchmarks.quantize import main as quantize
    from benchmarks.quantize import table as quantize_table

    save_crf_and_tagger(corpus, tmp_path, updates=5)
    output = tmp_path / "quantize.json"
    quantize([str(tmp_path / "crf"), str(tmp_path / "spacy"), str(corpus), "--repeats", "1", "--output", str(output)])
    result = json.loads(output.read_text())
    systems = ["crf_tagger", "crf_tagger int8", "crf_tagger bf16", "spaCy tagger"]
    assert list(result["words_per_second"]) == systems and all(v > 0 for v in result["words_per_second"].values())
    assert set(result["dev_score"]) == set(systems) and all(0 <= v <= 100 for v in result["dev_score"].values())
    assert set(result["changed_share"]) == {"int8", "bf16"}
    assert all(0.0 <= v <= 1.0 for v in result["changed_share"].values())
    table = quantize_table(result)
    assert "bf16 against float32" in table and "int8 against float32" in table


def test_pipeline_compare_trains_on_the_examples_the_config_reads(tmp_path):
    import spacy
    from spacy.tokens import Doc, DocBin

    from benchmarks.pipeline_compare import training_examples

    vocab = spacy.blank("en").vocab
    (a_words, a_tags), (b_words, b_tags) = SENTENCES[:2]
    doc = Doc(
        vocab,
        words=a_words + b_words,
        tags=a_tags + b_tags,
        sent_starts=[True] + [False] * (len(a_words) - 1) + [True] + [False] * (len(b_words) - 1),
    )
    path = tmp_path / "two_sentences.spacy"
    DocBin(docs=[doc, doc]).to_disk(path)
    sentences = spacy.blank("en", config={"corpora": {"train": {"gold_preproc": True}}})
    examples, gold_preproc = training_examples(sentences, path)
    assert gold_preproc and [len(eg.predicted) for eg in examples] == [len(a_words), len(b_words)] * 2
    assert [t.text for t in examples[1].predicted] == b_words
    examples, gold_preproc = training_examples(sentences, path, whole_docs=True)
    assert not gold_preproc and len(examples) == 2 and examples[0].reference.text == doc.text
    examples, gold_preproc = training_examples(spacy.blank("en"), path)
    assert not gold_preproc and len(examples) == 2


def test_embedding_times_both_cpu_paths_and_restores_them(corpus, tmp_path):
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    import spacy_crf.ml.distinct_tokens as distinct_tokens
    from benchmarks.embedding import VARIANTS
    from benchmarks.embedding import main as embedding
    from spacy_crf.ml.host_blas import HOST_BLAS_OPS

    from ..helpers import HASH_CHAR_EMBED, SMALL_MODEL, make_nlp

    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    nlp = make_nlp({**SMALL_MODEL, "tok2vec": HASH_CHAR_EMBED})
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(get_examples=lambda: examples)
    nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "crf")
    output = tmp_path / "embedding.json"
    real = distinct_tokens.distinct_tokens
    embedding([str(tmp_path / "crf"), str(corpus), "--repeats", "1", "--rows", "20", "--output", str(output)])
    result = json.loads(output.read_text())
    assert list(result["words_per_second"]) == list(VARIANTS) and all(
        v > 0 for v in result["words_per_second"].values()
    )
    ms = result["products"]["ms"]
    assert set(ms) == {"forward X @ W.T", "backward dY.T @ X", "backward dY @ W"}
    assert all(t["thinc_blis"] > 0 and t["numpy_blas"] > 0 for t in ms.values())
    assert result["products"]["n_in"] == 4 * 16 + 8 * 4 and result["changed_share"] == 0.0
    assert distinct_tokens.distinct_tokens is real
    reloaded = spacy.load(tmp_path / "crf").get_pipe("crf_tagger").model.get_ref("tok2vec")
    assert all(node.ops is HOST_BLAS_OPS for node in reloaded.walk() if node.name == "maxout")


def test_factory_defaults_times_both_factories_in_turn(corpus):
    result = json.loads(
        run("factory_defaults", corpus, corpus, "--init-sentences", 5, "--repeats", 2, "--quantize", "int8")
        .strip()
        .splitlines()[-1]
    )
    assert set(result["words_per_second"]) == {"crf_tagger", "tagger"} and len(result["ratios"]) == 2
    assert result["crf_model"] == "default, quantize int8" and result["ratio_median"] > 0
    assert "rows" not in result and result["docs"] == "as in the corpus"


def test_factory_defaults_times_one_doc_per_sentence(corpus, tmp_path):
    import spacy
    from spacy.tokens import Doc, DocBin

    vocab = spacy.blank("en").vocab
    words = ["I", "like", "ham", ".", "Eat", "eggs", "."]
    docs = [
        Doc(
            vocab,
            words=words,
            tags=["PRP", "VBP", "NN", ".", "VB", "NNS", "."],
            sent_starts=[True, False, False, False, True, False, False],
        )
        for _ in range(3)
    ]
    DocBin(docs=docs, attrs=["ORTH", "TAG", "SENT_START"]).to_disk(tmp_path / "dev.spacy")
    for flags, n_docs, kind in (([], 3, "as in the corpus"), (["--sentences"], 6, "sentences")):
        result = json.loads(
            run("factory_defaults", corpus, tmp_path / "dev.spacy", "--init-sentences", 5, "--repeats", 1, *flags)
            .strip()
            .splitlines()[-1]
        )
        assert result["docs"] == kind and result["n_docs"] == n_docs and result["ratio_median"] > 0


def test_factory_defaults_times_several_modes_in_one_process(corpus):
    result = json.loads(
        run(
            "factory_defaults",
            corpus,
            corpus,
            "--init-sentences",
            5,
            "--repeats",
            2,
            "--quantize",
            "none",
            "bf16",
            "--allocator",
            "steady",
        )
        .strip()
        .splitlines()[-1]
    )
    assert result["environment"]["allocator"] == ("steady" if sys.platform == "linux" else "default")
    assert [row["crf_model"] for row in result["rows"]] == ["default", "default, quantize bf16"]
    for row in result["rows"]:
        assert set(row["words_per_second"]) == {"crf_tagger", "tagger"} and len(row["ratios"]) == 2
    assert result["rows"][0]["words_per_second"]["tagger"] == result["rows"][1]["words_per_second"]["tagger"]


def test_the_allocator_setting_is_checked_and_recorded():
    """In a process of its own: mallopt changes the whole process."""
    code = (
        "from benchmarks.common import environment, use_allocator\n"
        "assert environment()['allocator'] == 'default'\n"
        "mode = use_allocator('steady')\n"
        "assert environment()['allocator'] == mode\n"
        "print(mode)\n"
        "try:\n    use_allocator('jemalloc')\nexcept ValueError as error:\n    print('refused', error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("steady" if sys.platform == "linux" else "default") and lines[1].startswith("refused")


def test_cpu_viterbi_times_torch_and_numba_on_a_pipelines_scores(corpus, tmp_path):
    """Both decoders on the same scores: identical paths, no label changed, both timed."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from benchmarks.cpu_viterbi import main as cpu_viterbi

    from ..helpers import SMALL_MODEL, make_nlp

    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    nlp = make_nlp(SMALL_MODEL)
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(get_examples=lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "crf")
    output = tmp_path / "cpu_viterbi.json"
    saved = os.environ.get("SPACY_CRF_KERNELS")
    cpu_viterbi([str(tmp_path / "crf"), str(corpus), "--repeats", "1", "--output", str(output)])
    assert os.environ.get("SPACY_CRF_KERNELS") == saved  # restored
    (row,) = json.loads(output.read_text())["rows"]
    assert row["same_paths"] and row["same_scores"] and row["tokens_labelled_differently"] == 0.0
    assert row["transitions"] == "full" and row["n_words"] == sum(len(d) for d in docs)
    assert all(row["decode_ms"][code] > 0 for code in ("torch", "numba", "numba, packed"))
    assert list(row["words_per_second"]) == ["torch", "numba, padded", "numba"]
    assert all(rate > 0 for rate in row["words_per_second"].values())
    with pytest.raises(SystemExit):
        cpu_viterbi([str(tmp_path / "crf")])  # not in pairs


def test_gpu_check_script_parses_and_names_its_outputs():
    """benchmarks/gpu_check.sh runs only on a GPU machine: here, bash parses it and
    it writes the files that docs/tables.py reads (gpu-before-after, predict-stages-gpu-h200)."""
    script = ROOT / "benchmarks" / "gpu_check.sh"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    assert "gpu_pipeline_init_$round.json" in text and "stages_gpu_" in text and "pytest -m gpu" in text


def test_by_sentence_times_both_settings_of_one_model(corpus, tmp_path):
    from spacy.tokens import DocBin
    from spacy.training import Example

    from ..helpers import SMALL_MODEL, make_nlp

    nlp = make_nlp(SMALL_MODEL)
    docs = list(DocBin().from_disk(corpus).get_docs(nlp.vocab))
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    nlp.initialize(get_examples=lambda: examples)
    nlp.to_disk(tmp_path / "crf")
    output = tmp_path / "by_sentence.json"
    for sentences in ([], ["--sentences"]):
        run("by_sentence", tmp_path / "crf", corpus, "--repeats", 2, "--output", output, *sentences)
        result = json.loads(output.read_text())
        assert set(result["words_per_second"]) == {"false", "true"} and result["threads"] == 1
        assert all(len(values) == 2 for values in result["rates"].values())
        assert result["n_words"] == sum(len(d) for d in docs) and result["ratio_true_over_false"] > 0
        assert result["docs"] == ("sentences" if sentences else "as in the corpus")
        assert result["settings"] == {"false": False, "true": True}  # each pipeline ran as named


def test_udpipe_trains_its_tagger_and_scores_the_gold_words(tmp_path):
    """benchmarks.udpipe on a tiny Turkish-like treebank with multiword
    tokens: UDPipe reads the words (not the tokens), and a tagger trained on
    these sentences tags them back; the dev file's unseen bundle is scored."""
    from ..project.test_template import TURKISH, TURKISH_UNSEEN, morph_conllu, words_of

    train, dev, output = tmp_path / "tr_tiny-ud-train.conllu", tmp_path / "tr_tiny-ud-dev.conllu", tmp_path / "u.json"
    train.write_text(morph_conllu(TURKISH * 4), encoding="utf8")
    dev.write_text(morph_conllu(TURKISH + [TURKISH_UNSEEN]), encoding="utf8")
    run("udpipe", train, dev, "--tagger-options", "iterations=3", "--output", output)
    result = json.loads(output.read_text())
    assert result["treebank"] == "tr_tiny" and result["tagger_options"] == "iterations=3"
    assert result["train_words"] == words_of(TURKISH * 4) and result["words"] == words_of(TURKISH + [TURKISH_UNSEEN])
    assert result["upos"] >= 90.0  # the train sentences come back; one dev bundle is unseen
    assert result["upos_feats"] <= result["ufeats"] and result["alltags"] <= result["upos_feats"]
    assert 0 < result["words_per_second"] and result["system"].startswith("UDPipe 1.")


def test_udpipe_errors_are_coded(tmp_path, monkeypatch):
    from benchmarks.udpipe import import_udpipe, read_sentences

    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\n\n")
    with pytest.raises(ValueError, match=r"\[E208\]"):
        read_sentences(bad)
    monkeypatch.setitem(sys.modules, "ufal.udpipe", None)
    with pytest.raises(ImportError, match=r"\[E207\].*pip install -e \"\.\[udpipe\]\""):
        import_udpipe()


def test_udpipe_compares_feats_as_spacy_keys_them():
    from benchmarks.udpipe import canonical

    assert canonical("Number=Sing|Case=Nom") == canonical("Case=Nom|Number=Sing") == "Case=Nom|Number=Sing"
    assert canonical("PronType=Rel,Int") == "PronType=Int,Rel"
    assert canonical("_") == canonical("") == "_"
    assert canonical("Case=Nom") != canonical("Case=Acc")


def test_batch_words_times_each_value_beside_spacys_tagger(corpus, tmp_path):
    docs = save_crf_and_tagger(corpus, tmp_path)
    output = tmp_path / "batch_words.json"
    run(
        "batch_words",
        tmp_path / "crf",
        tmp_path / "spacy",
        corpus,
        "--batch-words",
        0,
        5,
        1000,
        "--repeats",
        2,
        "--batch-size",
        2,
        "--memory",
        "--output",
        output,
    )
    result = json.loads(output.read_text())
    n_sentences = sum(len(list(d.sents)) if d.has_annotation("SENT_START") else 1 for d in docs)
    assert result["docs"] == n_sentences and result["words"] == sum(len(d) for d in docs)
    assert [row["batch_words"] for row in result["rows"]] == [0, 5, 1000]
    for row in result["rows"]:
        assert row["words_per_second"] > 0 and row["ratio_to_tagger_median"] > 0
        assert row["tokens_labelled_differently"] == 0.0  # the labels do not depend on the batches
        assert row["loaded_mb"] > 0 and row["pass_mb"] >= 0
