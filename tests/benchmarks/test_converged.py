"""benchmarks.converged and benchmarks.converged_report: what stopped a run,
the per-doc counts, the pooled paired bootstrap and the table."""

import json
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from benchmarks.converged import per_doc_counts, pooled_score, score_on, stopped_by
from benchmarks.converged_report import has_counts, load_runs, pooled_bootstrap, summary, table

ROOT = Path(__file__).resolve().parents[2]


def test_patience_or_the_cap_stopped_the_run():
    assert stopped_by(750, 250, patience=500, max_steps=3000) == "patience"
    assert stopped_by(3000, 2900, patience=500, max_steps=3000) == "cap"


def test_per_doc_counts_match_spacys_entity_and_tag_matching():
    vocab = spacy.blank("en").vocab
    words = ["Anna", "lives", "in", "Rome"]
    # gold, then predicted: one entity, one tag and two UPOS wrong
    ents = (["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-LOC", "I-LOC"])
    tags = (["NNP", "VBZ", "IN", "NNP"], ["NNP", "VBZ", "IN", "NN"])
    pos = (["PROPN", "VERB", "ADP", "PROPN"], ["PROPN", "NOUN", "ADP", "NOUN"])
    gold, predicted = (Doc(vocab, words=words, ents=ents[i], tags=tags[i], pos=pos[i]) for i in (0, 1))
    eg = Example(predicted, gold)
    assert per_doc_counts([eg], "ents_f") == {"score": "ents_f", "counts": [[1, 1, 1]]}
    assert per_doc_counts([eg], "tag_acc") == {"score": "tag_acc", "counts": [[3, 4]]}
    assert per_doc_counts([eg], "pos_acc") == {"score": "pos_acc", "counts": [[2, 4]]}


def record(counts, seed=0, score="ents_f"):
    value = float(sum(c[0] for c in counts) * 2 / max(sum(2 * c[0] + c[1] + c[2] for c in counts), 1))
    return {
        "seed": seed,
        "steps": 700,
        "best_step": 200,
        "best_select_score": 0.5,
        "converged": True,
        "score": {score: value, "per_doc": {"score": score, "counts": counts}},
        "evaluations": [{"step": 0, "score": 0.0}, {"step": 200, "score": 0.5}],
    }


def test_pooled_bootstrap_of_equal_and_of_better_systems():
    rng = numpy.random.default_rng(0)
    counts = [[int(tp), int(fp), int(fn)] for tp, fp, fn in rng.integers(0, 6, size=(40, 3))]
    same = pooled_bootstrap([record(counts)], [record(counts)], draws=500)
    assert same["difference"] == 0.0 and same["p"] == 1.0
    better = [[tp + 2, fp, max(fn - 2, 0)] for tp, fp, fn in counts]
    result = pooled_bootstrap([record(better, 0), record(better, 1)], [record(counts, 0), record(counts, 1)], draws=500)
    assert result["difference"] > 0 and result["low"] > 0 and result["p"] == pytest.approx(1 / 500)
    assert result["seeds"] == 2 and result["docs"] == 40
    assert pooled_bootstrap([{"score": {}}], [record(counts)]) is None  # no per-doc counts: no test


def test_table_lists_each_head_with_its_seeds_and_the_pooled_test(tmp_path):
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    for name, c in [
        ("ner10_crf_s0", counts),
        ("ner10_crf_s1", counts),
        ("ner10_spacy_s0", counts[::-1]),
        ("ner10_spacy_s1", counts),
    ]:
        (tmp_path / f"{name}.json").write_text(json.dumps(record(c, int(name[-1]))))
    assert sorted(load_runs(tmp_path)) == [("ner10", "crf"), ("ner10", "spacy")]
    rendered = table(tmp_path)
    assert "| crf_ner | 0, 1 | 2 of 2 |" in rendered and "| spaCy ner | 0, 1 | 2 of 2 |" in rendered
    assert "seeds 0, 1 pooled over the 3 held-out docs" in rendered
    assert table(tmp_path / "none") is None


def tag_record(counts, seed=0, score="tag_acc"):
    """A token-accuracy record (tag_acc or pos_acc) of per-doc (correct, gold) counts."""
    value = sum(c[0] for c in counts) / sum(c[1] for c in counts)
    return {**record([[0, 0, 0]], seed), "score": {score: value, "per_doc": {"score": score, "counts": counts}}}


def test_table_names_each_tasks_heads_and_tests_only_crf_against_spacy(tmp_path):
    """beam_ner's runs have their own row and no paired test; full-data tags
    and UPOS have theirs, with the morphologizers' names."""
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    for name in ("ner_crf_s0", "ner_spacy_s0", "ner_beam_s0"):
        (tmp_path / f"{name}.json").write_text(json.dumps(record(counts, 0)))
    (tmp_path / "morph_crf_s0.json").write_text(json.dumps(tag_record([[9, 10], [8, 10]], 0, "pos_acc")))
    (tmp_path / "morph_spacy_s0.json").write_text(json.dumps(tag_record([[7, 10], [8, 10]], 0, "pos_acc")))
    rendered = table(tmp_path)
    assert "| entities, UNER English EWT, all train docs | spaCy beam_ner | 0 | 1 of 1 |" in rendered
    assert "| UPOS, UD English EWT, all train docs | crf_morphologizer | 0 | 1 of 1 | 700 (200) | 85.00 |" in rendered
    assert "| UPOS, UD English EWT, all train docs | spaCy morphologizer | 0 | 1 of 1 | 700 (200) | 75.00 |" in rendered
    tests = [line for line in rendered.splitlines() if line.startswith("- ")]
    assert (
        len(tests) == 2
        and tests[0].startswith("- entities, UNER English EWT, all train docs: CRF minus spaCy")
        and "UPOS, UD English EWT, all train docs: CRF minus spaCy, seed 0" in tests[1]
    )
    from benchmarks import converged_report

    pytest.importorskip("matplotlib")
    converged_report.plot(tmp_path, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_table_pools_only_the_seeds_with_per_doc_counts(tmp_path):
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    for name in ("ner10_crf_s0", "ner10_spacy_s0"):
        without = record(counts, 0)
        del without["score"]["per_doc"]
        (tmp_path / f"{name}.json").write_text(json.dumps(without))
    for name in ("ner10_crf_s2", "ner10_spacy_s2"):
        (tmp_path / f"{name}.json").write_text(json.dumps(record(counts, 2)))
    rendered = table(tmp_path)
    assert "seed 2 pooled over the 3 held-out docs" in rendered
    assert "seed 0 is not in the paired bootstrap" in rendered


def test_table_says_which_task_lacks_a_head(tmp_path):
    (tmp_path / "tag10_crf_s0.json").write_text(json.dumps(tag_record([[9, 10], [8, 10]])))
    rendered = table(tmp_path)
    assert "| tags, UD English EWT, 10% of train docs | crf_tagger | 0 | 1 of 1 |" in rendered
    assert "- tags, UD English EWT, 10% of train docs: spaCy tagger has no run yet" in rendered
    (tmp_path / "tag10_spacy_s0.json").write_text(json.dumps(tag_record([[7, 10], [8, 10]])))
    assert "has no run yet" not in table(tmp_path)


# UPOS and features of the docs of test_score_on_counts...
UD = [
    {"pos": ["PROPN", "VERB", "PROPN"], "morphs": ["Number=Sing", "Number=Sing|Tense=Pres", "Number=Sing"]},
    {"pos": ["PROPN", "VERB", "PROPN"], "morphs": ["Number=Sing", "Tense=Past", "Number=Sing"]},
    {"pos": ["PROPN", "AUX", "ADV"], "morphs": ["Number=Sing", "Number=Sing|Tense=Pres", ""]},
]


def _saved_pipeline(tmp_path, gold_docs, pipe):
    nlp = spacy.blank("en")
    if pipe == "entity_ruler":
        ruler = nlp.add_pipe("entity_ruler")
        ruler.add_patterns([{"label": "PER", "pattern": "Anna"}, {"label": "LOC", "pattern": "Paris"}])
    else:
        nlp.add_pipe(pipe)
        nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in gold_docs])
    nlp.to_disk(tmp_path / pipe)
    return tmp_path / pipe


@pytest.mark.parametrize("pipe", ["entity_ruler", "tagger", "morphologizer", "crf_morphologizer"])
def test_score_on_counts_the_pipelines_predictions_and_pools_to_its_score(tmp_path, pipe):
    """score_on's per-doc counts come from the predicted docs (nlp.evaluate
    scores copies of the examples: counting the examples it was given found
    no predictions at all) and pool to the corpus score it reports."""
    vocab = spacy.blank("en").vocab
    gold = [
        Doc(
            vocab, words=["Anna", "visits", "Paris"], ents=["B-PER", "O", "B-LOC"], tags=["NNP", "VBZ", "NNP"], **UD[0]
        ),
        Doc(vocab, words=["Anna", "met", "Bob"], ents=["B-PER", "O", "B-PER"], tags=["NNP", "VBD", "NNP"], **UD[1]),
        Doc(vocab, words=["Rome", "is", "far"], ents=["B-LOC", "O", "O"], tags=["NNP", "VBZ", "RB"], **UD[2]),
    ]
    DocBin(docs=gold).to_disk(tmp_path / "dev.spacy")
    result = score_on(_saved_pipeline(tmp_path, gold, pipe), tmp_path / "dev.spacy")
    per_doc = result["per_doc"]
    assert pooled_score(per_doc) == pytest.approx(result[per_doc["score"]], abs=1e-12)
    if pipe == "entity_ruler":  # Anna, Paris, Anna found; Bob and Rome missed
        assert per_doc == {"score": "ents_f", "counts": [[2, 0, 0], [1, 0, 1], [0, 0, 1]]}
        assert result["ents_f"] == pytest.approx(0.75)
    else:
        assert per_doc["score"] == ("tag_acc" if pipe == "tagger" else "pos_acc")
        assert [gold for _, gold in per_doc["counts"]] == [3, 3, 3]


def test_score_on_counts_one_row_per_doc_when_the_config_reads_sentences(tmp_path):
    """With gold_preproc (the EWT configs) Corpus makes one example per
    sentence; the counts still have one row per dev doc, the bootstrap's unit."""
    vocab = spacy.blank("en").vocab
    words = ["Anna", "runs", ".", "Bob", "sleeps", "."]
    tags = ["NNP", "VBZ", ".", "NNP", "VBZ", "."]
    starts = [True, False, False, True, False, False]
    gold = [
        Doc(vocab, words=words[: 3 + 3 * (i > 0)], tags=tags[: 3 + 3 * (i > 0)], sent_starts=starts[: 3 + 3 * (i > 0)])
        for i in range(3)
    ]
    DocBin(docs=gold).to_disk(tmp_path / "dev.spacy")
    model = _saved_pipeline(tmp_path, gold, "tagger")
    config = spacy.util.load_config(model / "config.cfg")
    config["corpora"]["dev"]["gold_preproc"] = True
    config.to_disk(model / "config.cfg")
    result = score_on(model, tmp_path / "dev.spacy")
    counts = result["per_doc"]["counts"]
    assert [gold_tokens for _, gold_tokens in counts] == [3, 6, 6]  # docs of 1, 2 and 2 sentences
    assert pooled_score(result["per_doc"]) == pytest.approx(result["tag_acc"], abs=1e-12)


def test_records_counting_different_scores_are_not_paired():
    a = {**record([[0, 0, 0]]), "score": {"tag_acc": 0.5, "per_doc": {"score": "tag_acc", "counts": [[1, 2]]}}}
    b = {**record([[0, 0, 0]]), "score": {"pos_acc": 0.5, "per_doc": {"score": "pos_acc", "counts": [[1, 2]]}}}
    assert pooled_bootstrap([a], [b]) is None and pooled_bootstrap([a], [a]) is not None


def test_counts_that_do_not_add_up_to_the_score_are_left_out_of_the_test(tmp_path):
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    unannotated = record(counts, 1)  # what score_on recorded before it counted the predicted docs
    unannotated["score"]["per_doc"]["counts"] = [[0, 0, tp + fn] for tp, _, fn in counts]
    assert has_counts(record(counts, 1)) and not has_counts(unannotated)
    assert pooled_bootstrap([record(counts, 1)], [unannotated]) is None
    (tmp_path / "ner10_crf_s1.json").write_text(json.dumps(record(counts, 1)))
    (tmp_path / "ner10_spacy_s1.json").write_text(json.dumps(unannotated))
    assert "seed 1 is not in the paired bootstrap" in table(tmp_path)


def test_summary_shows_only_tasks_with_three_converged_seeds_per_head(tmp_path):
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    for seed in (0, 1):
        (tmp_path / f"ner10_crf_s{seed}.json").write_text(json.dumps(record(counts, seed)))
        (tmp_path / f"ner10_spacy_s{seed}.json").write_text(json.dumps(record(counts[::-1], seed)))
    assert summary(tmp_path) == ""  # two seeds: nothing the front door may show
    (tmp_path / "ner10_crf_s2.json").write_text(json.dumps(record(counts, 2)))
    unconverged = record(counts, 2)
    unconverged["converged"] = False
    (tmp_path / "ner10_spacy_s2.json").write_text(json.dumps(unconverged))
    assert summary(tmp_path) == ""  # a run the cap stopped does not count
    (tmp_path / "ner10_spacy_s2.json").write_text(json.dumps(record(counts, 2)))
    rendered = summary(tmp_path)
    row = "| entities, UNER English EWT, 10% of train docs | crf_ner / spaCy ner | 0, 1, 2 | 75.00 (75.00-75.00) |"
    assert row + " 75.00 (75.00-75.00) | +0.00 (p = 1, seeds 0, 1, 2) |" in rendered
    assert rendered.count("\n| entities") == 1 and "tags" not in rendered
    # seeds without per-doc counts: no test on the others alone
    lacking = json.loads((tmp_path / "ner10_spacy_s1.json").read_text())
    del lacking["score"]["per_doc"]
    (tmp_path / "ner10_spacy_s1.json").write_text(json.dumps(lacking))
    assert "| not yet (seed 1 lacks per-doc counts) |" in summary(tmp_path)


UPOS = {
    "PRP": "PRON",
    "VBP": "VERB",
    "VB": "VERB",
    "VBZ": "AUX",
    "JJ": "ADJ",
    "NN": "NOUN",
    "NNS": "NOUN",
    ".": "PUNCT",
}


def _full_corpus(folder):
    """CORPUS/ as benchmarks/converged_full.sh reads it: EWT-like docs with
    tags, UPOS and features, UNER-like docs with entities (the first
    capitalised word), train and two dev halves of each."""
    from ..helpers import SENTENCES

    vocab = spacy.blank("en").vocab
    ewt, uner = [], []
    for words, tags in SENTENCES * 3:
        morphs = ["Number=Plur" if t == "NNS" else "Number=Sing" if t == "NN" else "" for t in tags]
        ewt.append(Doc(vocab, words=words, tags=tags, pos=[UPOS[t] for t in tags], morphs=morphs))
        ents = ["B-X" if words[0].istitle() and i == 0 else "O" for i in range(len(words))]
        uner.append(Doc(vocab, words=words, ents=ents))
    folder.mkdir()
    for data, docs, train in (("ewt", ewt, "en_ewt-ud-train"), ("uner", uner, "uner-train")):
        DocBin(docs=docs).to_disk(folder / f"{train}.spacy")
        DocBin(docs=docs[0::2]).to_disk(folder / f"{data}-dev-a.spacy")
        DocBin(docs=docs[1::2]).to_disk(folder / f"{data}-dev-b.spacy")
    return folder


@pytest.mark.slow
def test_full_data_script_lands_each_run_as_it_finishes(tmp_path):
    """benchmarks/converged_full.sh (the GPU's full-data command), here on
    the CPU with a tiny BERT and a tiny protocol: each run named lands as
    OUT/RUN_sSEED.json, which the report reads as it is."""
    import os
    import subprocess
    import sys

    from ..project.test_transformer_configs import save_tiny_bert

    save_tiny_bert(tmp_path / "bert")
    protocol = {"max_steps": 4, "eval_frequency": 2, "patience": 10, "warmup_steps": 1, "learn_rate": 0.003}
    env = {
        **os.environ,
        "CORPUS": str(_full_corpus(tmp_path / "corpus")),
        "ENCODER": str(tmp_path / "bert"),
        "GPU_ID": "-1",
        "WORK": str(tmp_path / "work"),
        "SEED": "3",
        "PROTOCOL": json.dumps(protocol),
        "HF_HUB_OFFLINE": "1",
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    }
    out = tmp_path / "out"
    script = ROOT / "benchmarks" / "converged_full.sh"
    done = subprocess.run(
        ["bash", str(script), str(out), "tag_crf", "morph_spacy", "ner_beam"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + (out / "converged_full.log").read_text()
    assert sorted(p.name for p in out.glob("*.json")) == ["morph_spacy_s3.json", "ner_beam_s3.json", "tag_crf_s3.json"]
    for name, score in (("tag_crf_s3", "tag_acc"), ("morph_spacy_s3", "pos_acc"), ("ner_beam_s3", "ents_f")):
        run = json.loads((out / f"{name}.json").read_text())
        assert run["protocol"] == protocol and run["seed"] == 3 and run["gpu_id"] == -1
        assert run["steps"] == 4 and run["stopped_by"] == "cap" and run["converged"] is False  # the cap, not patience
        assert run["dev_select"].endswith("-dev-a.spacy") and run["dev_score"].endswith("-dev-b.spacy")
        assert run["score"]["per_doc"]["score"] == score
        assert pooled_score(run["score"]["per_doc"]) == pytest.approx(run["score"][score], abs=1e-12)
    assert sorted(load_runs(out)) == [("morph", "spacy"), ("ner", "beam"), ("tag", "crf")]
    log = (out / "converged_full.log").read_text()
    assert log.count(" rc=0") == 3
    # a misspelt name stops the script before anything trains, the valid names before it included
    wrong = subprocess.run(
        ["bash", str(script), str(out), "tag_crf", "tag"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert wrong.returncode == 2 and "unknown run 'tag'" in wrong.stderr
    assert (out / "converged_full.log").read_text() == log
