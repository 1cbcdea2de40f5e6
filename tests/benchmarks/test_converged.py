"""benchmarks.converged and benchmarks.converged_report: what stopped a run,
the per-doc counts, the pooled paired bootstrap and the table."""

import json

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from benchmarks.converged import per_doc_counts, pooled_score, score_on, stopped_by
from benchmarks.converged_report import has_counts, load_runs, pooled_bootstrap, summary, table


def test_patience_or_the_cap_stopped_the_run():
    assert stopped_by(750, 250, patience=500, max_steps=3000) == "patience"
    assert stopped_by(3000, 2900, patience=500, max_steps=3000) == "cap"


def test_per_doc_counts_match_spacys_entity_and_tag_matching():
    vocab = spacy.blank("en").vocab
    words = ["Anna", "lives", "in", "Rome"]
    gold = Doc(vocab, words=words, ents=["B-PER", "O", "O", "B-LOC"], tags=["NNP", "VBZ", "IN", "NNP"])
    predicted = Doc(vocab, words=words, ents=["B-PER", "O", "B-LOC", "I-LOC"], tags=["NNP", "VBZ", "IN", "NN"])
    eg = Example(predicted, gold)
    assert per_doc_counts([eg], "ents_f") == {"score": "ents_f", "counts": [[1, 1, 1]]}
    assert per_doc_counts([eg], "tag_acc") == {"score": "tag_acc", "counts": [[3, 4]]}


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
    assert "seeds [0] are not in the paired bootstrap" in rendered


def _saved_pipeline(tmp_path, gold_docs, pipe):
    nlp = spacy.blank("en")
    if pipe == "entity_ruler":
        ruler = nlp.add_pipe("entity_ruler")
        ruler.add_patterns([{"label": "PER", "pattern": "Anna"}, {"label": "LOC", "pattern": "Paris"}])
    else:
        nlp.add_pipe("tagger")
        nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in gold_docs])
    nlp.to_disk(tmp_path / pipe)
    return tmp_path / pipe


@pytest.mark.parametrize("pipe", ["entity_ruler", "tagger"])
def test_score_on_counts_the_pipelines_predictions_and_pools_to_its_score(tmp_path, pipe):
    """score_on's per-doc counts come from the predicted docs (nlp.evaluate
    scores copies of the examples: counting the examples it was given found
    no predictions at all) and pool to the corpus score it reports."""
    vocab = spacy.blank("en").vocab
    gold = [
        Doc(vocab, words=["Anna", "visits", "Paris"], ents=["B-PER", "O", "B-LOC"], tags=["NNP", "VBZ", "NNP"]),
        Doc(vocab, words=["Anna", "met", "Bob"], ents=["B-PER", "O", "B-PER"], tags=["NNP", "VBD", "NNP"]),
        Doc(vocab, words=["Rome", "is", "far"], ents=["B-LOC", "O", "O"], tags=["NNP", "VBZ", "RB"]),
    ]
    DocBin(docs=gold).to_disk(tmp_path / "dev.spacy")
    result = score_on(_saved_pipeline(tmp_path, gold, pipe), tmp_path / "dev.spacy")
    per_doc = result["per_doc"]
    assert pooled_score(per_doc) == pytest.approx(result[per_doc["score"]], abs=1e-12)
    if pipe == "entity_ruler":  # Anna, Paris, Anna found; Bob and Rome missed
        assert per_doc == {"score": "ents_f", "counts": [[2, 0, 0], [1, 0, 1], [0, 0, 1]]}
        assert result["ents_f"] == pytest.approx(0.75)
    else:
        assert [gold for _, gold in per_doc["counts"]] == [3, 3, 3]


def test_counts_that_do_not_add_up_to_the_score_are_left_out_of_the_test(tmp_path):
    counts = [[3, 1, 1], [2, 0, 2], [4, 2, 0]]
    unannotated = record(counts, 1)  # what score_on recorded before it counted the predicted docs
    unannotated["score"]["per_doc"]["counts"] = [[0, 0, tp + fn] for tp, _, fn in counts]
    assert has_counts(record(counts, 1)) and not has_counts(unannotated)
    assert pooled_bootstrap([record(counts, 1)], [unannotated]) is None
    (tmp_path / "ner10_crf_s1.json").write_text(json.dumps(record(counts, 1)))
    (tmp_path / "ner10_spacy_s1.json").write_text(json.dumps(unannotated))
    assert "seeds [1] are not in the paired bootstrap" in table(tmp_path)


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
    assert row + " 75.00 (75.00-75.00) | +0.00 (p = 1, seeds [0, 1, 2]) |" in rendered
    assert rendered.count("\n| entities") == 1 and "tags" not in rendered
