"""docs.tables fills the marked tables of README.md and
docs/benchmarks.md from the project's outputs, leaves tables without outputs
alone, and is idempotent."""

import json
import re
from pathlib import Path

from docs.tables import PAGES, RENDERERS, environment_line, main

ROOT = Path(__file__).resolve().parents[2]
ENV = {
    "cpu": "Some CPU",
    "logical_cpus": 2,
    "gpu": None,
    "python": "3.11.7",
    "torch": "2.13.0",
    "spacy": "3.8.7",
    "spacy_crf": "1.0.0",
}
GPU_ENV = {**ENV, "gpu": "Some GPU"}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def write_flair(path, side, batch_size=256):
    """A benchmarks.peers record with these side-by-side figures."""
    write(
        path,
        {
            "environment": ENV,
            "train_words_per_second": 800.0,
            "side_by_side": side,
            "settings": {"column": "xpos", "predict_batch_size": batch_size, "repeats": 3},
            "settings_text": "Flair 0.15.1",
            "epochs_done": 1,
            "seconds": 270.0,
            "stopped_early": False,
        },
    )


def rendered_page(root, table):
    """docs/benchmarks.md holding only the empty block of `table`, rendered
    by docs.tables from root's metrics/; the page's text."""
    page = root / "docs" / "benchmarks.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"<!-- table:{table}:start -->\n<!-- table:{table}:end -->\n")
    assert main(["--root", str(root)]) == 0
    return page.read_text()


def test_the_environment_line_names_every_machine_the_runs_were_measured_on():
    one = environment_line({"environment": ENV}, {"environment": ENV}, {"no": "environment"})
    assert one == "Measured on: Some CPU (2 logical CPUs); Python 3.11.7, torch 2.13.0, spaCy 3.8.7, spacy-crf 1.0.0."
    other = {**ENV, "cpu_flags": ["avx2", "avx512f"]}
    two = environment_line({"environment": ENV}, {"environment": other}, {"environment": ENV})
    assert two.startswith(
        "Measured on: Some CPU (2 logical CPUs) and Some CPU (2 logical CPUs; avx2, avx512f), the runs split between them; "
    )
    assert two.count("Python") == 1
    newer = environment_line({"environment": ENV}, {"environment": {**ENV, "spacy_crf": "1.1.0"}})
    assert "spacy-crf 1.0.0 and Python 3.11.7, torch 2.13.0, spaCy 3.8.7, spacy-crf 1.1.0." in newer
    assert environment_line({}, {"environment": None}) == "Measured on: not recorded."


def test_every_marker_of_the_pages_has_a_renderer_and_every_renderer_a_marker():
    """The generator renders exactly the tables its pages keep."""
    markers = set()
    for page in PAGES:
        text = (ROOT / page).read_text()
        starts = re.findall(r"<!-- table:([a-z0-9_-]+):start -->", text)
        assert all(f"<!-- table:{name}:end -->" in text for name in starts), page
        markers.update(starts)
        if "<!-- results:start -->" in text:
            markers.add("results")
    assert markers == set(RENDERERS)


def test_the_pages_as_committed_are_left_alone_without_outputs(tmp_path):
    for page in PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text((ROOT / page).read_text())
    assert main(["--root", str(tmp_path), "--check"]) == 0
    assert main(["--root", str(tmp_path)]) == 0
    assert all((tmp_path / page).read_text() == (ROOT / page).read_text() for page in PAGES)


def test_tables_are_filled_from_outputs_and_others_left_alone(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "cpu.cfg").write_text("")
    (tmp_path / "README.md").write_text("# x\n<!-- results:start -->\n<!-- results:end -->\nend\n")
    (tmp_path / "docs" / "benchmarks.md").write_text(
        "a\n<!-- table:results:start -->\n<!-- table:results:end -->\n"
        "b\n<!-- table:gpu-pipeline:start -->\n<!-- table:gpu-pipeline:end -->\n"
        "c\n<!-- table:gpu-kernels:start -->\nkept\n<!-- table:gpu-kernels:end -->\n"
    )
    write(tmp_path / "metrics" / "cpu.json", {"tag_acc": 0.9478, "pos_acc": None})
    write(
        tmp_path / "metrics" / "cpu-speed.json",
        {
            "words_per_second": 12345,
            "runs": [12000, 12345],
            "threads": 1,
            "batch_size": 256,
            "device": "cpu",
            "environment": ENV,
        },
    )
    write(
        tmp_path / "metrics" / "speed" / "gpu_pipeline.json",
        {
            "environment": GPU_ENV,
            "spacy_train": {"crf_tagger": {"steps_per_second": 27.734}, "tagger": {"steps_per_second": 36.56}},
            "nlp_pipe": {
                "crf_tagger": {"words_per_second": 559211, "tag_acc": 0.9391, "vs_tagger": 0.78},
                "tagger": {"words_per_second": 716837},
            },
        },
    )
    assert main(["--root", str(tmp_path)]) == 0
    readme = (tmp_path / "README.md").read_text()
    assert "| crf_tagger, CPU config | `configs/cpu.cfg` | 94.78 | - | 12,345 |" in readme
    assert "train time" not in readme and "Some CPU (2 logical CPUs)" in readme
    page = (tmp_path / "docs" / "benchmarks.md").read_text()
    assert "| crf_tagger, CPU config | `configs/cpu.cfg` | 94.78 | - | 12,345 |" in page  # the same table, both pages
    assert "| crf_tagger | 27.73 | 559,211 | 0.78x | 93.91 |" in page
    assert "| spaCy tagger | 36.56 | 716,837 | - | - |" in page and "Some GPU" in page
    assert "<!-- table:gpu-kernels:start -->\nkept\n<!-- table:gpu-kernels:end -->" in page
    assert main(["--root", str(tmp_path), "--check"]) == 0  # idempotent
    (tmp_path / "README.md").write_text("<!-- results:start -->\nold\n<!-- results:end -->\n")
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert (tmp_path / "README.md").read_text() == "<!-- results:start -->\nold\n<!-- results:end -->\n"


def test_a_benchmark_json_in_metrics_leaves_the_results_table_alone(tmp_path):
    """A benchmark's JSON in metrics/ (such as the contention command's) is no
    `spacy evaluate` output: the results table keeps its rows."""
    readme = "# x\n<!-- results:start -->\n| crf_tagger | 94.78 |\n<!-- results:end -->\n"
    (tmp_path / "README.md").write_text(readme)
    by_kind = {kind: {"median": 1.0, "runs": [1.0]} for kind in ("quiet", "torch", "busy")}
    write(
        tmp_path / "metrics" / "contention.json",
        {
            "settings": {"repeats": "3", "batch_size": "50", "updates": "8", "pipe_sentences": "1000"},
            "results": {"crf_tagger": {"train updates/s": by_kind}},
            "environment": ENV,
        },
    )
    assert main(["--root", str(tmp_path)]) == 0
    assert (tmp_path / "README.md").read_text() == readme


def test_morph_table(tmp_path):
    from docs.tables import morph

    assert morph(tmp_path) is None
    folder = tmp_path / "metrics" / "morph" / "tr_x"
    write(folder / "cpu_morph.json", {"pos_acc": 0.9, "morph_acc": 0.85})
    write(folder / "cpu_morph-speed.json", {"words_per_second": 1000, "environment": ENV})
    table = morph(tmp_path)
    assert "Some CPU (2 logical CPUs)" in table and "### tr_x" in table
    assert "| 90.00 | 85.00 |" in table


def test_quantize_block_reads_its_own_folder(tmp_path):
    """quantize-morph-amd renders metrics/speed/amd_morph/ only, a table per run."""
    names = ["crf_tagger", "crf_tagger int8", "spaCy morphologizer"]
    record = {
        "threads": 1,
        "repeats": 7,
        "score": "morph_acc",
        "crf_model": "crf",
        "baseline_model": "base",
        "baseline_name": "spaCy morphologizer",
        "words_per_second": dict(zip(names, [300, 360, 200])),
        "dev_score": dict(zip(names, [89.02, 89.06, 80.21])),
        "changed_share": {"int8": 0.0016},
        "environment": {**ENV, "allocator": "steady", "cpu_flags": ["avx2"]},
    }
    write(tmp_path / "metrics" / "speed" / "quantize_other.json", {**record, "crf_model": "elsewhere"})
    write(tmp_path / "metrics" / "speed" / "amd_morph" / "quantize_tr_1.json", record)
    page = rendered_page(tmp_path, "quantize-morph-amd")
    assert "`crf` against `base`:" in page and "elsewhere" not in page
    assert "| crf_tagger int8 | 360 | 1.80x | 89.06 |" in page
    assert (
        "int8 against float32: 1.20x the words/s, +0.04 dev morph_acc, 0.16% of the tokens labelled differently."
        in page
    )
    assert "Some CPU (2 logical CPUs; avx2)" in page and page.count("malloc: steady") == 1


# the entity calibration figures of a benchmarks.entity_probabilities record
CURVE = {
    "n": 800,
    "ece": 0.04,
    "ece_sampling": 0.035,
    "brier": 0.15,
    "precision_at": {"0.9": {"n": 60, "precision": 0.95}},
}


def test_entity_probabilities_tables(tmp_path):
    """The cross-fitted records (crossfit_*.json, benchmarks.entity_probabilities
    --and) and the held-out folds (folds_*.json), each block its own."""
    from docs.tables import entity_probabilities

    assert entity_probabilities(tmp_path, prefix="crossfit_") is None
    curve = CURVE
    pairs = [
        {"dev": "corpus/uner-dev-b.spacy", "temperature": 1.5},
        {"dev": "corpus/uner-dev-a.spacy", "temperature": 1.25},
    ]
    write(
        tmp_path / "metrics" / "calibration" / "crossfit_ner_cpu.json",
        {
            "dev": "corpus/uner-dev-b.spacy",
            "system": "crf_ner",
            "temperature": None,
            "pairs": pairs,
            "gold_preproc": True,
            "environment": ENV,
            "entities": curve,
            "thresholds": [{"threshold": 0.5, "precision": 0.8, "recall": 0.5, "f1": 0.615}],
        },
    )
    write(
        tmp_path / "metrics" / "calibration" / "crossfit_ner_beam.json",
        {
            "dev": "corpus/uner-dev-b.spacy",
            "system": "beam_ner",
            "beam": {"beam_width": 32},
            "gold_preproc": True,
            "environment": ENV,
            "entities": curve,
            "thresholds": [],
        },
    )
    (tmp_path / "metrics" / "calibration" / "pr_crossfit_ner_cpu.png").write_bytes(b"png")
    assert entity_probabilities(tmp_path, prefix="folds_") is None
    table = entity_probabilities(tmp_path, prefix="crossfit_")
    assert (
        "| `ner_cpu` | crf_ner | exact posteriors, tau = 1.50, 1.25 | uner-dev-b.spacy + uner-dev-a.spacy "
        "| 800 | 0.0400 | 0.0350 | 0.1500 | 0.9500 (60) |" in table
    )
    assert "| `ner_beam` | beam_ner | beam scores (width 32) |" in table
    assert "| 0.50 | - | 80.0 / 50.0 / 61.5 |" in table  # beam_ner measured no threshold here
    assert "(`crf_ner`'s `threshold`)" in table
    assert "![precision and recall over t, ner_cpu](images/pr_crossfit_ner_cpu.png)" in table
    assert "ner_beam](images" not in table  # no plot, no image line
    page = rendered_page(tmp_path, "entity-probabilities-crossfit")
    assert (tmp_path / "docs" / "images" / "pr_crossfit_ner_cpu.png").read_bytes() == b"png"
    assert table in page


def test_converged_probabilities_table(tmp_path):
    """benchmarks/runs/converged/probabilities/*.json (benchmarks.converged_probabilities):
    each record's objective is said, and a plot is shown when docs/images has it."""
    from docs.tables import converged_probabilities

    assert converged_probabilities(tmp_path) is None
    curve = {**CURVE, "n": 886, "ece": 0.05, "precision_at": {"0.9": {"n": 235, "precision": 0.86}}}
    folder = tmp_path / "benchmarks" / "runs" / "converged" / "probabilities"
    pairs = [
        {"dev": "corpus/uner-dev-b.spacy", "temperature": 2.71},
        {"dev": "corpus/uner-dev-a.spacy", "temperature": 2.46},
    ]
    common = {"gold_preproc": False, "environment": ENV, "entities": curve, "thresholds": []}
    write(
        folder / "ner10_crf_s2_entities.json", {"system": "crf_ner", "objective": "entities", "pairs": pairs, **common}
    )
    as_trained = [{**pair, "temperature": 1.0} for pair in pairs]
    write(folder / "ner10_crf_s2_none.json", {"system": "crf_ner", "objective": "none", "pairs": as_trained, **common})
    beam_pairs = [{"dev": pair["dev"], "beam": {"beam_width": 32}} for pair in pairs]
    write(
        folder / "ner10_beam_s0.json",
        {"system": "beam_ner", "objective": None, "beam": {"beam_width": 32}, "pairs": beam_pairs, **common},
    )
    (tmp_path / "docs" / "images").mkdir(parents=True)
    (tmp_path / "docs" / "images" / "pr_converged_ner10_crf_s2_entities.png").write_bytes(b"png")
    table = converged_probabilities(tmp_path)
    assert "| `ner10_crf_s2_entities` | crf_ner | exact posteriors, tau fitted to entities = 2.71, 2.46 |" in table
    assert "| `ner10_crf_s2_none` | crf_ner | exact posteriors as trained, tau = 1.00, 1.00 |" in table
    assert "| `ner10_beam_s0` | beam_ner | beam scores (width 32) |" in table
    assert "Raw text" in table
    assert "](images/pr_converged_ner10_crf_s2_entities.png)" in table and "ner10_beam_s0](images" not in table
    assert table in rendered_page(tmp_path, "converged-probabilities")


def test_peers_and_pipeline_compare_tables_say_what_was_trained_on(tmp_path):
    from docs.tables import peers, pipeline_compare

    compare = {
        "environment": ENV,
        "threads": 1,
        "pipe_words_per_second": {"crf_tagger": 300, "spaCy tagger": 200},
        "train_words_per_second": {"crf_tagger": 4000, "spaCy tagger": 6000},
        "decode_share_of_encoder": 0.05,
        "train_examples": {"crf_tagger": "sentences, gold tokens", "spaCy tagger": "sentences, gold tokens"},
    }
    write(tmp_path / "metrics" / "speed" / "pipeline_compare.json", compare)
    assert peers(tmp_path) is None  # no Flair run
    table = pipeline_compare(tmp_path)
    assert "Training: one training sentence per example, on its gold tokens" in table
    assert "| crf_tagger | 300 | 4,000 |" in table and "training 0.67x" in table
    side = {
        "flair": {"words_per_second": 100.0, "dev_accuracy": 91.9},
        "crf_tagger": {"words_per_second": 500.0, "dev_accuracy": 94.7},
        "crf_tagger_int8": {"words_per_second": 600.0, "dev_accuracy": 94.7},
        "spacy_tagger": {"words_per_second": 300.0, "dev_accuracy": 93.9},
    }
    write(
        tmp_path / "metrics" / "speed" / "flair.json",
        {
            "environment": ENV,
            "train_words_per_second": 1000.0,
            "side_by_side": side,
            "settings": {"column": "xpos", "predict_batch_size": 256, "repeats": 5},
            "settings_text": "Flair 0.15.1",
            "epochs_done": 10,
            "seconds": 1920.0,
            "stopped_early": False,
        },
    )
    table = peers(tmp_path)
    assert "| crf_tagger | 94.70 | 500 | 5.0x | 4,000 | 4.0x |" in table
    assert "| crf_tagger, quantize int8 | 94.70 | 600 | 6.0x | - | - |" in table
    assert "| spaCy tagger | 93.90 | 300 | 3.0x | 6,000 | 6.0x |" in table
    assert "(`nlp.update`, one training sentence per example" in table
    del compare["train_examples"]  # a record from before the field: no claim about the unit
    write(tmp_path / "metrics" / "speed" / "pipeline_compare.json", compare)
    assert "(`nlp.update`)." in peers(tmp_path) and "Training:" not in pipeline_compare(tmp_path)


def test_peers_table_gives_each_rounds_ratio(tmp_path):
    """`rounds`: the median and range of the ratios of the runs taken in turn,
    which can differ from the ratio of the medians."""
    from docs.tables import peers

    side = {
        "flair": {"words_per_second": 100.0, "runs": [100.0, 50.0, 200.0], "dev_accuracy": 75.4},
        "crf_tagger_fast": {"words_per_second": 1000.0, "runs": [1000.0, 300.0, 1100.0], "dev_accuracy": 94.4},
        "spacy_tagger": {"words_per_second": 400.0, "dev_accuracy": 94.2},
    }
    write_flair(tmp_path / "metrics" / "speed" / "fast" / "flair.json", side)
    table = peers(tmp_path, folder="speed/fast", rounds=True)
    assert "| inference vs Flair, per round: median (range) |" in table
    # rounds 10x, 6x and 5.5x: median 6.0x, where the ratio of the medians is 10.0x
    assert "| crf_tagger `cpu_fast.cfg` | 94.40 | 1,000 | 10.0x | 6.0x (5.5x-10.0x) | - | - |" in table
    # a system timed without its rounds gets no per-round cell, not a wrong one
    assert "| spaCy tagger | 94.20 | 400 | 4.0x | - | - | - |" in table
    assert "| Flair | 75.40 | 100 | 1.0x | 1.0x (1.0x-1.0x) | 800 | 1.0x |" in table
    assert "per round" not in peers(tmp_path, folder="speed/fast")
    side["spacy_tagger"]["runs"] = [500.0, 100.0, 400.0]
    write_flair(tmp_path / "metrics" / "speed" / "fast" / "flair.json", side)
    table = peers(tmp_path, folder="speed/fast", rounds=True, against_tagger=True)
    # against the tagger's rounds: 2.0x, 3.0x and 2.75x
    assert (
        "| crf_tagger `cpu_fast.cfg` | 94.40 | 1,000 | 10.0x | 6.0x (5.5x-10.0x) | 2.75x (2.00x-3.00x) | - | - |"
        in table
    )
    assert "| spaCy tagger | 94.20 | 400 | 4.0x | 2.0x (2.0x-5.0x) | 1.00x (1.00x-1.00x) | - | - |" in table


def test_peers_batch_sizes_table(tmp_path):
    from docs.tables import peers_batch_sizes

    for folder, size, flair_runs in (("a", 32, [100.0, 200.0, 100.0]), ("b", 256, [50.0, 50.0, 100.0])):
        side = {
            "flair": {"words_per_second": 100.0, "runs": flair_runs, "dev_accuracy": 75.4},
            "crf_tagger": {"words_per_second": 1000.0, "runs": [1000.0, 1000.0, 900.0], "dev_accuracy": 94.7},
            "spacy_tagger": {"words_per_second": 400.0, "runs": [400.0, 500.0, 300.0], "dev_accuracy": 94.0},
        }
        write_flair(tmp_path / "metrics" / "speed" / folder / "flair.json", side, batch_size=size)
    table = peers_batch_sizes(tmp_path, folders=("speed/b", "speed/a", "speed/missing"))
    lines = table.splitlines()
    assert "medians of 3 rounds" in lines[0]
    # rows in the order of the batch size; a system a run did not time gets "-"
    # batch 32: crf rounds 10x, 5x, 9x -> 9.0x; against the tagger 2.5x, 2.0x, 3.0x -> 2.50x
    assert lines[4] == "| 32 | 100 | 1,000 (9.0x) | - | - | - | 400 (3.0x) | 2.50x |"
    assert lines[5] == "| 256 | 100 | 1,000 (20.0x) | - | - | - | 400 (8.0x) | 2.50x |"


def test_gpu_tables(tmp_path):
    """The kernel and predict-stage tables of a GPU run; stage records
    measured on the CPU stay out of the GPU table."""
    from docs.tables import gpu_kernels, predict_stages_gpu

    assert gpu_kernels(tmp_path) is None and predict_stages_gpu(tmp_path) is None
    speed = tmp_path / "metrics" / "speed"
    row = {
        "shape": [256, 40, 18],
        "same_paths": True,
        "same_nll": True,
        "viterbi_kernel_ms": 0.164,
        "viterbi_torch_ms": 8.83,
        "viterbi_torchcrf_ms": 93.0,
        "viterbi_vs_torchcrf": 567.1,
        "nll_kernel_ms": 1.467,
        "nll_torch_ms": 18.11,
        "nll_torchcrf_ms": 37.3,
        "nll_vs_torchcrf": 25.4,
        "bilstm_forward_ms": 3.33,
        "viterbi_share_of_bilstm": 0.049,
    }
    write(
        speed / "gpu_kernels.json",
        {"repeats": 30, "rows": [row], "versions": {"cuda": "13.0", "triton": "3.6.0"}, "environment": GPU_ENV},
    )
    kernels = gpu_kernels(tmp_path)
    assert "| (256, 40, 18) | True / True | 0.164 ms | 8.83 ms | 93.0 ms | 567x |" in kernels
    assert "Some GPU" in kernels and "Triton 3.6.0" in kernels
    stage = {
        "n_docs": 110,
        "n_words": 10542,
        "predict_words_per_second": 353350,
        "ms": {"tok2vec": 7.1, "tok2vec + network": 27.4, "decode (Viterbi)": 4.0, "predict": 29.8},
    }
    write(speed / "stages_tr.json", {**stage, "ops": "NumpyOps", "environment": ENV})
    assert predict_stages_gpu(tmp_path) is None
    write(speed / "stages_gpu_tr.json", {**stage, "ops": "CupyOps", "environment": GPU_ENV})
    gpu = predict_stages_gpu(tmp_path)
    assert "| `gpu_tr` | 110, 10,542 | 7 ms | 27 ms | 4 ms | 30 ms | 13% | 353,350 |" in gpu
    assert "`tr`" not in gpu and "Some GPU" in gpu and "CUDA-synchronised" in gpu


def test_udpipe_table(tmp_path):
    from docs.tables import udpipe

    assert udpipe(tmp_path) is None
    write(
        tmp_path / "metrics" / "peers" / "udpipe_tr_x.json",
        {
            "system": "UDPipe 1.4.0 tagger",
            "treebank": "tr_x",
            "tagger_options": "UDPipe's defaults",
            "train_minutes": 3.9,
            "upos": 90.25,
            "ufeats": 86.03,
            "upos_feats": 84.1,
            "alltags": 82.78,
            "words_per_second": 15359,
            "environment": ENV,
        },
    )
    table = udpipe(tmp_path)
    assert "Some CPU (2 logical CPUs)" in table
    assert (
        "| tr_x | UDPipe 1.4.0 tagger | UDPipe's defaults | 90.25 | 86.03 | 84.10 | 82.78 | 3.9 min | 15,359 |" in table
    )


def trf_system(component, **scores):
    return {
        "component": component,
        "words_per_second": 1000 if component.startswith("crf") else 1250,
        "train_time": {"train_seconds": 330.0},
        **scores,
        "training": {
            "encoder": "all-MiniLM-L6-v2",
            "max_steps": 50,
            "seed": 0,
            "batcher": {"@batchers": "spacy.batch_by_padded.v1", "size": 2000},
            "learn_rate": {"warmup_steps": 5, "total_steps": 50, "initial_rate": 0.0003},
        },
    }


def test_transformer_tables(tmp_path):
    """metrics/trf/*.json (benchmarks.transformer_compare): a row per task, score and
    spaCy system; the README's compact rows leave out beam_ner and the train times."""
    from docs.tables import _p, mcnemar_p, transformer

    assert _p(mcnemar_p(4796.5)) == "p < 0.0001"  # erfc underflows to 0: no floor

    assert transformer(tmp_path) is None
    mc = {"mcnemar_chi2": 3.84}
    write(
        tmp_path / "metrics" / "trf" / "tagger.json",
        {
            "task": "tagger",
            "threads": 2,
            "speed_words": 5000,
            "environment": ENV,
            "systems": {"crf": trf_system("crf_tagger", tag_acc=95.5), "spacy": trf_system("tagger", tag_acc=95.0)},
            "paired": {"spacy": {"tag_": mc}},
        },
    )
    boot = {"delta": 1.25, "delta_95_low": -0.5, "delta_95_high": 3.0, "p_value": 0.2, "samples": 10000}
    ents = {"ents_f": 60.0, "ents_p": 70.0, "ents_r": 52.5}
    write(
        tmp_path / "metrics" / "trf" / "ner_10.json",
        {
            "task": "ner",
            "threads": 2,
            "speed_words": 5000,
            "environment": ENV,
            "systems": {
                "crf": trf_system("crf_ner", **ents),
                "spacy": trf_system("ner", **ents),
                "beam": trf_system("beam_ner", **ents),
            },
            "paired": {"spacy": boot, "beam": boot},
        },
    )
    table = transformer(tmp_path)
    assert "Encoder `all-MiniLM-L6-v2`; every pipeline 50 steps of `spacy.batch_by_padded.v1` size 2000" in table
    assert "peak learning rate 0.0003 after 5 warm-up steps" in table
    assert (
        "| XPOS, UD English EWT | 100% | tag_acc | `crf_tagger` 95.50 | spaCy tagger 95.00 "
        "| +0.50, chi2 = 3.8, p = 0.0500 | 5.5 min / 5.5 min | 1,000 / 1,250 (0.80x) |"
    ) in table
    assert (
        "| entities, Universal NER English EWT | 10% | ents_f (P / R) | `crf_ner` 60.00 (70.0 / 52.5) "
        "| spaCy beam_ner 60.00 (70.0 / 52.5) | +1.25 [-0.50, +3.00], p = 0.2000 |"
    ) in table
    compact = transformer(tmp_path, compact=True)
    assert "beam_ner" not in compact and "min" not in compact.split("\n\n")[1]
    assert compact.count("\n| ") == 3  # the header row, and tagger and ner_10 against spaCy's ner
    assert abs(mcnemar_p(3.84) - 0.05) < 0.001
    write(
        tmp_path / "metrics" / "trf" / "ner_10.json",
        {
            **json.loads((tmp_path / "metrics" / "trf" / "ner_10.json").read_text()),
            "paired": {"spacy": {**boot, "p_value": 0.0001}},
        },
    )
    assert "+1.25 [-0.50, +3.00], p <= 0.0001 |" in transformer(tmp_path)  # the bootstrap's floor, 1 / draws
