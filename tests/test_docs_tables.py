"""scripts.docs_tables fills the marked tables from the project's outputs,
leaves tables without outputs alone, and is idempotent."""
import json

from scripts.docs_tables import main

ENV = {"cpu": "Some CPU", "logical_cpus": 2, "gpu": None, "python": "3.11.7", "torch": "2.13.0",
       "spacy": "3.8.7", "spacy_crf": "0.2.0"}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def write_flair(path, side, batch_size=256):
    """A benchmarks.peers record with these side-by-side figures."""
    write(path, {
        "environment": ENV, "train_words_per_second": 800.0, "side_by_side": side,
        "settings": {"column": "xpos", "predict_batch_size": batch_size, "repeats": 3}, "settings_text": "Flair 0.15.1",
        "epochs_done": 1, "seconds": 270.0, "stopped_early": False})


def rendered_performance_page(root, table):
    """docs/performance.md holding only the empty block of `table`, rendered
    by scripts.docs_tables from root's metrics/; the page's text."""
    page = root / "docs" / "performance.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"<!-- table:{table}:start -->\n<!-- table:{table}:end -->\n")
    assert main(["--root", str(root)]) == 0
    return page.read_text()


def test_tables_are_filled_from_outputs_and_others_left_alone(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "cpu.cfg").write_text("")
    (tmp_path / "README.md").write_text("# x\n<!-- results:start -->\n<!-- results:end -->\nend\n")
    (tmp_path / "docs" / "performance.md").write_text(
        "a\n<!-- table:contention:start -->\n<!-- table:contention:end -->\n"
        "b\n<!-- table:kernels:start -->\nkept\n<!-- table:kernels:end -->\n"
    )
    write(tmp_path / "metrics" / "cpu.json", {"tag_acc": 0.9478, "pos_acc": None})
    write(tmp_path / "metrics" / "cpu-speed.json", {"words_per_second": 12345, "runs": [12000, 12345],
                                                    "threads": 1, "batch_size": 256, "device": "cpu",
                                                    "environment": ENV})
    by_kind = {kind: {"median": value, "runs": [value]} for kind, value in
               (("quiet", 4.0), ("torch", 3.0), ("busy", 2.0))}
    write(tmp_path / "metrics" / "contention.json", {
        "settings": {"repeats": "3", "batch_size": "50", "updates": "8", "pipe_sentences": "1000"},
        "results": {"crf_tagger": {"train updates/s": by_kind}},
        "environment": ENV,
    })
    assert main(["--root", str(tmp_path)]) == 0
    readme = (tmp_path / "README.md").read_text()
    assert "| crf_tagger, CPU config | `configs/cpu.cfg` | 94.78 | - | 12,345 |" in readme
    assert "train time" not in readme and "Some CPU (2 logical CPUs)" in readme
    performance = (tmp_path / "docs" / "performance.md").read_text()
    assert "| crf_tagger | train updates/s | 4.0 | 3.0 (0.75x) | 2.0 (0.50x) |" in performance
    assert "<!-- table:kernels:start -->\nkept\n<!-- table:kernels:end -->" in performance
    assert main(["--root", str(tmp_path), "--check"]) == 0  # idempotent
    (tmp_path / "README.md").write_text("<!-- results:start -->\nold\n<!-- results:end -->\n")
    assert main(["--root", str(tmp_path), "--check"]) == 1


def test_a_benchmark_json_in_metrics_leaves_the_results_table_alone(tmp_path):
    """metrics/contention.json (the contention command's documented output) is
    no `spacy evaluate` output: the results table keeps its rows."""
    readme = "# x\n<!-- results:start -->\n| crf_tagger | 94.78 |\n<!-- results:end -->\n"
    (tmp_path / "README.md").write_text(readme)
    by_kind = {kind: {"median": 1.0, "runs": [1.0]} for kind in ("quiet", "torch", "busy")}
    write(tmp_path / "metrics" / "contention.json", {
        "settings": {"repeats": "3", "batch_size": "50", "updates": "8", "pipe_sentences": "1000"},
        "results": {"crf_tagger": {"train updates/s": by_kind}}, "environment": ENV,
    })
    assert main(["--root", str(tmp_path)]) == 0
    assert (tmp_path / "README.md").read_text() == readme


def test_morph_and_rejected_spans_tables(tmp_path):
    from scripts.docs_tables import morph, rejected_spans

    assert morph(tmp_path) is None and rejected_spans(tmp_path) is None
    folder = tmp_path / "metrics" / "morph" / "tr_x"
    write(folder / "cpu_morph.json", {"pos_acc": 0.9, "morph_acc": 0.85})
    write(folder / "cpu_morph-speed.json", {"words_per_second": 1000, "environment": ENV})
    table = morph(tmp_path)
    assert "Some CPU (2 logical CPUs)" in table and "### tr_x" in table
    assert "| 90.00 | 85.00 |" in table
    scores = {"ents_p": 80.0, "ents_r": 70.0, "ents_f": 74.67}
    write(tmp_path / "metrics" / "ner" / "rejected_spans.json", {
        "config": "configs/ner.cfg", "train_docs": 100, "annotated_docs": 20, "answered_docs": 80,
        "accepted_spans": 40, "rejected_spans": 55, "gold_entities_in_answered_docs": 300, "weak_steps": 10,
        "weak_model": {"ents_f": 50.0}, "steps": 20, "seeds": [0],
        "arms": {"accepted": scores, "accepted+rejected": {**scores, "ents_f": 76.0}},
        "ents_f_gain": {"rejections_beside_accepts": {"mean": 1.33, "per_seed": [1.33]}},
    })
    table = rejected_spans(tmp_path)
    assert "the annotator accepts 40 and rejects 55" in table
    assert "| annotated docs + the others' accepted and rejected spans | 80.00 | 70.00 | 76.00 |" in table
    assert "F1 gain from the rejections beside the accepted spans: +1.33." in table
    assert "every arm trains a new model for 20 steps" in table
    write(tmp_path / "metrics" / "ner" / "rejected_spans_weak.json", {
        "config": "configs/ner.cfg", "train_docs": 100, "annotated_docs": 20, "answered_docs": 80,
        "accepted_spans": 40, "rejected_spans": 55, "gold_entities_in_answered_docs": 300, "weak_steps": 10,
        "weak_model": {"ents_f": 50.0}, "steps": 5, "start": "weak", "seeds": [0, 1],
        "arms": {"accepted": scores, "accepted+rejected": scores},
        "arms_last": {"accepted": scores, "accepted+rejected": {**scores, "ents_f": 70.0}},
        "ents_f_gain": {"rejections_beside_accepts": {"mean": 0.5, "per_seed": [1.0, 0.0]}},
        "ents_f_gain_last": {"rejections_beside_accepts": {"mean": -4.67, "per_seed": [-4.0, -5.34]}},
    })
    table = rejected_spans(tmp_path)
    assert "every arm goes on training the weak model for 5 more steps, once per seed (0, 1)" in table
    assert "| annotated docs + the others' accepted and rejected spans | 80.00 | 70.00 | 74.67 | 70.00 |" in table
    assert "F1 gain from the rejections beside the accepted spans: +0.50 (seed by seed +1.00, +0.00); " \
        "of the last models -4.67." in table
    assert table.count("| training data |") == 2


def test_entity_probabilities_table(tmp_path):
    from scripts.docs_tables import entity_probabilities

    assert entity_probabilities(tmp_path) is None
    curve = {"n": 400, "ece": 0.05, "ece_sampling": 0.031, "brier": 0.17,
             "precision_at": {"0.9": {"n": 30, "precision": 0.9}}}
    rows = [{"threshold": 0.5, "precision": 0.8, "recall": 0.5, "f1": 0.615}]
    write(tmp_path / "metrics" / "calibration" / "entities_ner.json", {
        "dev": "corpus/uner-dev-odd.spacy", "system": "crf_tagger", "temperature": 2.0, "gold_preproc": True,
        "environment": ENV, "entities": curve, "thresholds": rows,
    })
    table = entity_probabilities(tmp_path)
    assert "| `ner` | crf_tagger | exact posteriors, tau = 2.00 | uner-dev-odd.spacy | 400 | 0.0500 | 0.0310 | 0.1700 " \
        "| 0.9000 (30) |" in table
    assert "| 0.50 | 80.0 / 50.0 / 61.5 |" in table


def test_pooled_entity_probabilities_table(tmp_path):
    """The cross-fitted records (crossfit_*.json, scripts.entity_probabilities
    --and): both halves and both temperatures, apart from the entities_ table."""
    from scripts.docs_tables import entity_probabilities

    curve = {"n": 800, "ece": 0.04, "ece_sampling": 0.035, "brier": 0.15,
             "precision_at": {"0.9": {"n": 60, "precision": 0.95}}}
    pairs = [{"dev": "corpus/uner-dev-b.spacy", "temperature": 1.5}, {"dev": "corpus/uner-dev-a.spacy", "temperature": 1.25}]
    write(tmp_path / "metrics" / "calibration" / "crossfit_ner_cpu.json", {
        "dev": "corpus/uner-dev-b.spacy", "system": "crf_tagger", "temperature": None, "pairs": pairs,
        "gold_preproc": True, "environment": ENV, "entities": curve,
        "thresholds": [{"threshold": 0.9, "precision": 0.95, "recall": 0.1, "f1": 0.181}],
    })
    (tmp_path / "metrics" / "calibration" / "pr_crossfit_ner_cpu.png").write_bytes(b"png")
    assert entity_probabilities(tmp_path) is None
    table = entity_probabilities(tmp_path, prefix="crossfit_")
    assert "| `ner_cpu` | crf_tagger | exact posteriors, tau = 1.50, 1.25 | uner-dev-b.spacy + uner-dev-a.spacy " \
        "| 800 | 0.0400 | 0.0350 | 0.1500 | 0.9500 (60) |" in table
    assert "![precision and recall over t, ner_cpu](images/pr_crossfit_ner_cpu.png)" in table


def test_peers_and_pipeline_compare_tables_say_what_was_trained_on(tmp_path):
    from scripts.docs_tables import peers, pipeline_compare

    compare = {"environment": ENV, "threads": 1, "pipe_words_per_second": {"crf_tagger": 300, "spaCy tagger": 200},
               "train_words_per_second": {"crf_tagger": 4000, "spaCy tagger": 6000}, "decode_share_of_encoder": 0.05,
               "train_examples": {"crf_tagger": "sentences, gold tokens", "spaCy tagger": "sentences, gold tokens"}}
    write(tmp_path / "metrics" / "speed" / "pipeline_compare.json", compare)
    assert peers(tmp_path) is None  # no Flair run
    table = pipeline_compare(tmp_path)
    assert "Training: one training sentence per example, on its gold tokens" in table
    assert "| crf_tagger | 300 | 4,000 |" in table and "training 0.67x" in table
    side = {"flair": {"words_per_second": 100.0, "dev_accuracy": 91.9},
            "crf_tagger": {"words_per_second": 500.0, "dev_accuracy": 94.7},
            "crf_tagger_int8": {"words_per_second": 600.0, "dev_accuracy": 94.7},
            "spacy_tagger": {"words_per_second": 300.0, "dev_accuracy": 93.9}}
    write(tmp_path / "metrics" / "speed" / "flair.json", {
        "environment": ENV, "train_words_per_second": 1000.0, "side_by_side": side,
        "settings": {"column": "xpos", "predict_batch_size": 256, "repeats": 5}, "settings_text": "Flair 0.15.1",
        "epochs_done": 10, "seconds": 1920.0, "stopped_early": False})
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
    from scripts.docs_tables import peers

    side = {"flair": {"words_per_second": 100.0, "runs": [100.0, 50.0, 200.0], "dev_accuracy": 75.4},
            "crf_tagger_fast": {"words_per_second": 1000.0, "runs": [1000.0, 300.0, 1100.0], "dev_accuracy": 94.4},
            "spacy_tagger": {"words_per_second": 400.0, "dev_accuracy": 94.2}}
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
    assert "| crf_tagger `cpu_fast.cfg` | 94.40 | 1,000 | 10.0x | 6.0x (5.5x-10.0x) | 2.75x (2.00x-3.00x) | - | - |" in table
    assert "| spaCy tagger | 94.20 | 400 | 4.0x | 2.0x (2.0x-5.0x) | 1.00x (1.00x-1.00x) | - | - |" in table
    side["crf_tagger_int8"] = {"words_per_second": 1200.0, "dev_accuracy": 94.4}  # timed without its rounds
    write_flair(tmp_path / "metrics" / "speed" / "fast" / "flair.json", side)
    table = peers(tmp_path, folder="speed/fast", rounds=True, against_tagger=True)
    assert "| crf_tagger, quantize int8 | 94.40 | 1,200 | 12.0x | - | - | - | - |" in table



def test_embedding_table(tmp_path):
    write(tmp_path / "metrics" / "speed" / "embedding.json", {
        "model": "training/cpu/model-best", "quantize": "int8", "threads": 1, "repeats": 5,
        "products": {"rows": 1130, "n_in": 640, "n_out": 384,
                     "ms": {"forward X @ W.T": {"thinc_blis": 18.5, "numpy_blas": 6.1}},
                     "speedup": {"forward X @ W.T": 3.03}},
        "words_per_second": {"BLIS, every token": 30000, "numpy BLAS, every token": 33000,
                             "numpy BLAS, per distinct token": 39000},
        "changed_share": 0.0001, "environment": ENV,
    })
    performance = rendered_performance_page(tmp_path, "embedding")
    assert "| forward X @ W.T | 18.50 | 6.10 | 3.03x |" in performance
    assert "| numpy BLAS, per distinct token | 39,000 | 1.30x |" in performance
    assert "medians of 5" in performance and "0.01%" in performance


GPU_ENV = {**ENV, "gpu": "Some GPU"}


def test_gpu_tables(tmp_path):
    """The kernel, many-labels, pipeline and predict-stage tables of a GPU run;
    CPU stage records stay in the CPU table."""
    from scripts.docs_tables import gpu_kernels, gpu_pipeline, large_labels_gpu, predict_stages, predict_stages_gpu

    assert gpu_kernels(tmp_path) is None and gpu_pipeline(tmp_path) is None
    assert large_labels_gpu(tmp_path) is None and predict_stages_gpu(tmp_path) is None
    speed = tmp_path / "metrics" / "speed"
    row = {"shape": [256, 40, 18], "same_paths": True, "same_nll": True, "viterbi_kernel_ms": 0.164,
           "viterbi_torch_ms": 8.83, "viterbi_torchcrf_ms": 93.0, "viterbi_vs_torchcrf": 567.1,
           "nll_kernel_ms": 1.467, "nll_torch_ms": 18.11, "nll_torchcrf_ms": 37.3, "nll_vs_torchcrf": 25.4,
           "bilstm_forward_ms": 3.33, "viterbi_share_of_bilstm": 0.049}
    write(speed / "gpu_kernels.json", {"repeats": 30, "rows": [row], "versions": {"cuda": "13.0", "triton": "3.6.0"},
                                       "environment": GPU_ENV})
    assert "| (256, 40, 18) | True / True | 0.164 ms | 8.83 ms | 93.0 ms | 567x |" in gpu_kernels(tmp_path)
    assert "Some GPU" in gpu_kernels(tmp_path) and "Triton 3.6.0" in gpu_kernels(tmp_path)
    write(speed / "gpu_pipeline.json", {
        "environment": GPU_ENV,
        "spacy_train": {"crf_tagger": {"steps_per_second": 27.734}, "tagger": {"steps_per_second": 36.56}},
        "nlp_pipe": {"crf_tagger": {"words_per_second": 559211, "tag_acc": 0.9391, "vs_tagger": 0.78},
                     "tagger": {"words_per_second": 716837}},
    })
    pipeline = gpu_pipeline(tmp_path)
    assert "| crf_tagger | 27.73 | 559,211 | 0.78x | 93.91 |" in pipeline
    assert "| spaCy tagger | 36.56 | 716,837 | - | - |" in pipeline

    def op(operation, k, kind, ms, kernels):
        return {"operation": operation, "labels": k, "transitions": kind, "ms": ms, "peak_mb": 1.0, "kernels": kernels}

    write(speed / "large_labels_gpu.json", {
        "environment": GPU_ENV, "batch": 32, "length": 40, "repeats": 10,
        "rows": [op("viterbi", 500, "factored", 13.3, "torch"), op("bilstm_forward", 500, "factored", 1.0, "torch"),
                 op("marginals", 500, "factored", 32.6, "torch")],
    })
    assert large_labels_gpu(tmp_path) is None  # needs the kernel run too
    write(speed / "large_labels_gpu_kernel.json", {
        "environment": GPU_ENV, "batch": 32, "length": 40, "repeats": 10,
        "rows": [op("viterbi", 500, "factored", 0.6, "auto"), op("bilstm_forward", 500, "factored", 1.0, "auto")],
    })
    many = large_labels_gpu(tmp_path)
    assert "| 500 | factored | 13.3 ms, 1 MB | not run | 32.6 ms, 1 MB | not run | 1.0 ms, 1 MB | 93% |" in many
    assert "| 500 | factored | 0.6 ms, 1 MB | not run | not run | not run | 1.0 ms, 1 MB | 37% |" in many
    stage = {"n_docs": 110, "n_words": 10542, "predict_words_per_second": 353350,
             "ms": {"tok2vec": 7.1, "tok2vec + network": 27.4, "decode (Viterbi)": 4.0, "predict": 29.8}}
    write(speed / "stages_gpu_tr.json", {**stage, "ops": "CupyOps", "environment": GPU_ENV})
    write(speed / "stages_tr.json", {**stage, "ops": "NumpyOps", "environment": ENV})
    gpu, cpu = predict_stages_gpu(tmp_path), predict_stages(tmp_path)
    assert "`gpu_tr`" in gpu and "`gpu_tr`" not in cpu and "`tr`" in cpu
    assert "Some GPU" in gpu and "CUDA-synchronised" in gpu and "Some CPU" in cpu


def test_gpu_before_after_table(tmp_path):
    """benchmarks/gpu_check.sh's rounds: per-round medians, their ratio, and the median of all runs."""
    from scripts.docs_tables import gpu_before_after, predict_stages_gpu

    assert gpu_before_after(tmp_path) is None
    folder = tmp_path / "metrics" / "speed" / "gpu_h200"
    for number, (now, before) in enumerate([([10, 12, 14], [10, 10, 10]), ([8, 9, 30], [12, 12, 12])], 1):
        pipe = {
            "crf_tagger": {"words_per_second": now[1], "runs": now, "environment": GPU_ENV},
            "crf_tagger (before)": {"words_per_second": before[1], "runs": before},
            "tagger": {"words_per_second": 5, "runs": [5, 5, 5]},
        }
        write(folder / f"gpu_pipeline_init_{number}.json", {"nlp_pipe": pipe})
    table = gpu_before_after(tmp_path)
    assert "| 1 | 12 | 10 | 1.20x | 5 |" in table and "| 2 | 9 | 12 | 0.75x | 5 |" in table
    assert "| all 6 runs | 11 | 11 | 1.00x | 5 |" in table  # medians of 8,9,10,12,14,30 and 10,10,10,12,12,12
    assert "Some GPU" in table and "median of 3 runs" in table
    stage = {"n_docs": 1, "n_words": 9, "predict_words_per_second": 90, "ops": "CupyOps", "environment": GPU_ENV,
             "ms": {"tok2vec": 1.0, "tok2vec + network": 2.0, "decode (Viterbi)": 1.0, "predict": 3.0}}
    write(folder / "stages_gpu_en.json", stage)
    assert "`gpu_en`" in predict_stages_gpu(tmp_path, folder="speed/gpu_h200")
    assert predict_stages_gpu(tmp_path) is None


def test_bf16_blocks_read_their_own_folder(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "performance.md").write_text(
        "<!-- table:quantize:start -->\nkept\n<!-- table:quantize:end -->\n"
        "<!-- table:quantize-bf16:start -->\n<!-- table:quantize-bf16:end -->\n"
        "<!-- table:factory-defaults-bf16:start -->\n<!-- table:factory-defaults-bf16:end -->\n"
    )
    names = ["crf_tagger", "crf_tagger int8", "crf_tagger bf16", "spaCy tagger"]
    write(tmp_path / "metrics" / "speed" / "bf16" / "quantize_a.json", {
        "threads": 1, "repeats": 7, "score": "tag_acc", "crf_model": "crf", "baseline_model": "base",
        "baseline_name": "spaCy tagger", "words_per_second": dict(zip(names, [300, 360, 390, 200])),
        "dev_score": dict(zip(names, [94.0, 93.98, 94.0, 93.0])),
        "changed_share": {"int8": 0.001, "bf16": 0.0001},
        "environment": {**ENV, "allocator": "steady", "cpu_flags": ["avx512_bf16", "amx_bf16"]},
    })
    rows = [{"crf_model": "default", "words_per_second": {"crf_tagger": 400, "tagger": 250},
             "ratio_median": 1.6, "ratios": [1.6, 1.5]},
            {"crf_model": "default, quantize bf16", "words_per_second": {"crf_tagger": 500, "tagger": 250},
             "ratio_median": 2.0, "ratios": [2.0, 1.9]}]
    write(tmp_path / "metrics" / "speed" / "bf16" / "factory_defaults.json",
          {**rows[0], "rows": rows, "environment": ENV})
    assert main(["--root", str(tmp_path)]) == 0
    performance = (tmp_path / "docs" / "performance.md").read_text()
    assert "<!-- table:quantize:start -->\nkept\n<!-- table:quantize:end -->" in performance
    assert "| crf_tagger bf16 | 390 | 1.95x | 94.00 |" in performance
    assert performance.count("malloc: steady") == 1  # only the record measured so
    assert "Some CPU (2 logical CPUs; avx512_bf16, amx_bf16)" in performance
    assert "bf16 against float32: 1.30x the words/s, +0.00 dev tag_acc, 0.01% of the tokens" in performance
    assert "| default | 400 | 250 | 1.60x | 1.60, 1.50 |" in performance
    assert "| default, quantize bf16 | 500 | 250 | 2.00x | 2.00, 1.90 |" in performance
    assert main(["--root", str(tmp_path), "--check"]) == 0


def test_cpu_viterbi_table(tmp_path):
    write(tmp_path / "metrics" / "speed" / "cpu_viterbi.json", {
        "threads": 1, "repeats": 7, "environment": ENV,
        "rows": [{"model": "training/cpu/model-best", "corpus": "dev.spacy", "quantize": "none",
                  "shape": [201, 315, 49], "n_words": 25147, "transitions": "full", "same_paths": True,
                  "same_scores": True, "decode_ms": {"torch": 60.0, "numba": 10.0, "numba, packed": 9.0},
                  "words_per_second": {"torch": 50000, "numba, padded": 52000, "numba": 55000}, "runs": {},
                  "tokens_labelled_differently": 0.0}],
    })
    performance = rendered_performance_page(tmp_path, "cpu-viterbi")
    assert "| `training/cpu/model-best` | none | (201, 315, 49), full | True / True | 60.0 ms | 10.0 ms (6.0x) | 9.0 ms |" in performance
    assert ("| `training/cpu/model-best` | none | 50,000 | 52,000 (1.04x) | 55,000 (1.10x) | 0.00% |") in performance
    assert "medians of 7 rounds" in performance


def test_pruned_lattice_table(tmp_path):
    write(tmp_path / "metrics" / "speed" / "pruned_lattice" / "tr_imst.json", {
        "environment": ENV, "labels": 981, "sequences": 983, "tokens": 10542, "threads": 1, "repeats": 7,
        "rows": [
            {"decoder": "full, exact", "keep": 981, "decode_ms": 514.1, "kept_gold": 99.25, "as_exact": 100.0,
             "bundle_accuracy": 80.29},
            {"decoder": "full, pruned", "keep": 8, "decode_ms": 24.4, "first_pass_ms": 19.3, "kept_gold": 95.47,
             "as_exact": 100.0, "bundle_accuracy": 80.29},
            {"decoder": "factored, exact", "keep": 981, "decode_ms": 24.0, "kept_gold": 99.25, "bundle_accuracy": 80.17},
        ],
    })
    performance = rendered_performance_page(tmp_path, "pruned-lattice")
    assert "983 dev sentences, 10,542 words, 981 bundles; 1 thread(s), medians of 7." in performance
    assert "| full, pruned | 8 | 24.4 (19.3) | 95.47% | 100.00% | 80.29 |" in performance
    assert "| factored, exact | 981 | 24.0 | 99.25% | - | 80.17 |" in performance


def test_bucketed_lstm_tables(tmp_path):
    """benchmarks.lstm_cpu's cases and pipelines, and the spacy train rounds of two codes."""
    from scripts.docs_tables import lstm_cpu, train_steps_before_after

    assert lstm_cpu(tmp_path) is None and train_steps_before_after(tmp_path) is None
    folder = tmp_path / "metrics" / "speed" / "buckets"
    case = {"case": "train: 1,000-word batch", "rows": 70, "tokens": 1002, "longest": 58,
            "ms": {"packed": 140.2, "buckets 2.0/80.0": 70.1}, "speedup": {"packed": 1.0, "buckets 2.0/80.0": 2.0}}
    pipe = {"model": "m", "quantize": "bf16", "words_per_second": {"packed": 70902.0, "buckets": 123090.0},
            "speedup": 1.736, "tokens_labelled_differently": 0.00004}
    write(folder / "lstm_cpu_en.json", {"inputs": 128, "hidden": 192, "depth": 1, "threads": 1, "repeats": 7,
                                        "cases": [case], "pipelines": [pipe], "environment": ENV})
    table = lstm_cpu(tmp_path)
    assert "| en | train: 1,000-word batch | 70, 1,002 (58) | 140.2 ms | 70.1 ms | 2.00x |" in table
    assert "| `m` | bf16 | 70,902 | 123,090 | 1.74x | 0.004% |" in table and "Some CPU" in table
    for name, steps in [("now", 8.0), ("before", 6.4)]:
        write(folder / f"train_steps_{name}_1.json", {"steps": 270, "steps_per_second": steps,
                                                      "words_per_second": int(100 * steps), "environment": ENV})
    assert "| 1 | 270 | 8.00, 800 | 6.40, 640 | 1.25x |" in train_steps_before_after(tmp_path)


def test_cpu_before_after_table(tmp_path):
    from scripts.docs_tables import cpu_before_after

    assert cpu_before_after(tmp_path) is None
    folder = tmp_path / "metrics" / "speed" / "composed_addmm"
    for n, (after, before, base) in enumerate([(110, 100, 100), (90, 100, 120), (105, 100, 100)], 1):
        for kind, rate in (("after", after), ("before", before), ("baseline", base)):
            write(folder / f"{kind}_{n}.json", {"words_per_second": rate, "runs": [rate] * 7, "threads": 1,
                                               "batch_size": 256, "environment": ENV})
    table = cpu_before_after(tmp_path)
    assert "| 1 | 110 | 100 | 1.10x | 100 | 1.10x |" in table
    assert "| 2 | 90 | 100 | 0.90x | 120 | 0.75x |" in table
    assert "| median | 105 | 100 | 1.05x | 100 | 1.05x |" in table
    assert "median of 7 runs" in table


def test_udpipe_table(tmp_path):
    from scripts.docs_tables import udpipe

    assert udpipe(tmp_path) is None
    write(tmp_path / "metrics" / "peers" / "udpipe_tr_x.json", {
        "system": "UDPipe 1.4.0 tagger", "treebank": "tr_x", "tagger_options": "UDPipe's defaults",
        "train_minutes": 3.9, "upos": 90.25, "ufeats": 86.03, "upos_feats": 84.1, "alltags": 82.78,
        "words_per_second": 15359, "environment": ENV})
    table = udpipe(tmp_path)
    assert "Some CPU (2 logical CPUs)" in table
    assert "| tr_x | UDPipe 1.4.0 tagger | UDPipe's defaults | 90.25 | 86.03 | 84.10 | 82.78 | 3.9 min | 15,359 |" in table


def test_morph_errors_table(tmp_path):
    from scripts.docs_tables import morph_errors

    assert morph_errors(tmp_path) is None
    common = {"dev": "dev.spacy", "tokens": 100, "feats_only_errors": {"it: Case=Nom -> Case=Acc": 2}}
    write(tmp_path / "metrics" / "analysis" / "morph_errors_a.json", {
        **common, "model": "a", "feats_accuracy": 95.0, "feats_errors": 5, "with_pos_error": 2, "with_tag_error": 3,
        "feats_only": 2, "per_feature": {"Number": 3, "Case": 2}})
    write(tmp_path / "metrics" / "analysis" / "morph_errors_b.json", {
        **common, "model": "b", "feats_accuracy": 94.0, "feats_errors": 6, "with_pos_error": 1, "with_tag_error": None,
        "feats_only": 5, "per_feature": {"Number": 1, "Typo": 4}})
    table = morph_errors(tmp_path, features=2).splitlines()
    # the features most often wrong over both records (Number 4, Typo 4), a row each
    assert table[0] == ("| model | FEATS | FEATS errors | with a UPOS error | with a tag error | FEATS-only "
                        "| Number | Typo |")
    assert table[2] == "| `a` | 95.00 | 5 | 2 | 3 | 2 | 3 | 0 |"
    assert table[3] == "| `b` | 94.00 | 6 | 1 | - | 5 | 1 | 4 |"  # no tags predicted: "-"
    assert table[-2:] == ["- `a`: it: Case=Nom -> Case=Acc (2).", "- `b`: it: Case=Nom -> Case=Acc (2)."]


def test_batch_words_table(tmp_path):
    write(tmp_path / "metrics" / "speed" / "batch_words" / "batch_words.json", {
        "crf_model": "crf", "baseline_model": "tagger", "docs": 4002, "words": 50294, "batch_size": 256,
        "threads": 1, "repeats": 7, "tagger_words_per_second": 20000, "environment": ENV,
        "rows": [{"batch_words": 0, "words_per_second": 30000, "ratio_to_tagger_median": 1.5,
                  "ratio_to_tagger_range": [1.4, 1.6], "tokens_labelled_differently": 0.0,
                  "loaded_mb": 500.0, "pass_mb": 12.3},
                 {"batch_words": 16384, "words_per_second": 45000, "ratio_to_tagger_median": 2.25,
                  "ratio_to_tagger_range": [2.1, 2.4], "tokens_labelled_differently": 0.0,
                  "loaded_mb": 500.0, "pass_mb": 40.6}],
    })
    performance = rendered_performance_page(tmp_path, "batch-words")
    assert "4,002 docs of one sentence (50,294 words), `nlp.pipe(batch_size=256)`, medians of 7 rounds" in performance
    assert "| 0 | 30,000 | 1.50x (1.40x-1.60x) | 0.00% | 12 MB |" in performance
    assert "| 16,384 | 45,000 | 2.25x (2.10x-2.40x) | 0.00% | 41 MB |" in performance


def test_peers_batch_sizes_table(tmp_path):
    from scripts.docs_tables import peers_batch_sizes

    for folder, size, flair_runs in (("a", 32, [100.0, 200.0, 100.0]), ("b", 256, [50.0, 50.0, 100.0])):
        side = {"flair": {"words_per_second": 100.0, "runs": flair_runs, "dev_accuracy": 75.4},
                "crf_tagger": {"words_per_second": 1000.0, "runs": [1000.0, 1000.0, 900.0], "dev_accuracy": 94.7},
                "spacy_tagger": {"words_per_second": 400.0, "runs": [400.0, 500.0, 300.0], "dev_accuracy": 94.0}}
        write_flair(tmp_path / "metrics" / "speed" / folder / "flair.json", side, batch_size=size)
    table = peers_batch_sizes(tmp_path, folders=("speed/b", "speed/a", "speed/missing"))
    lines = table.splitlines()
    assert "medians of 3 rounds" in lines[0]
    # rows in the order of the batch size; a system a run did not time gets "-"
    # batch 32: crf rounds 10x, 5x, 9x -> 9.0x; against the tagger 2.5x, 2.0x, 3.0x -> 2.50x
    assert lines[4] == "| 32 | 100 | 1,000 (9.0x) | - | - | - | 400 (3.0x) | 2.50x |"
    assert lines[5] == "| 256 | 100 | 1,000 (20.0x) | - | - | - | 400 (8.0x) | 2.50x |"
