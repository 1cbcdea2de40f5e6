"""benchmarks.entity_probabilities: the entity probabilities of crf_ner (its
exact posteriors) and of spaCy's beam_ner (its beam scores), their
calibration and precision/recall over a threshold, on tiny trained pipelines."""

import json
import shutil

import numpy
import pytest
import spacy
from spacy.scorer import Scorer
from spacy.tokens import DocBin
from spacy.training import Example

from benchmarks import converged_probabilities
from benchmarks import entity_probabilities as script
from spacy_crf.calibration import Outcomes, entity_outcomes

from ..components.test_ner import NER_DATA, ner_examples
from ..helpers import SMALL_MODEL, make_nlp, train

# the dev docs: the training texts and some it never saw, all annotated
DEV_DATA = NER_DATA + [
    ("Anna likes Berlin and New York", [(0, 4, "PER"), (11, 17, "LOC"), (22, 30, "LOC")]),
    ("Smith went to Paris", [(0, 5, "PER"), (14, 19, "LOC")]),
    ("I like green eggs", []),
]
TEMPERATURE = 1.7
KEYS = {"model", "dev", "component", "system", "entities", "thresholds", "environment", "gold_entities"}


def write_dev(path):
    nlp = spacy.blank("en")
    docs = [Example.from_dict(nlp.make_doc(text), {"entities": ents}).reference for text, ents in DEV_DATA]
    DocBin(docs=docs).to_disk(path)
    return path


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    return write_dev(tmp_path_factory.mktemp("dev") / "dev.spacy")


@pytest.fixture(scope="module")
def crf_model(tmp_path_factory):
    """A briefly trained crf_ner recogniser, saved with a temperature and
    without store_entity_probs."""
    nlp = make_nlp(factory="crf_ner")
    train(nlp, ner_examples(nlp), steps=12)
    nlp.get_pipe("crf_ner").temperature = TEMPERATURE
    path = tmp_path_factory.mktemp("crf") / "model"
    nlp.to_disk(path)
    return path


@pytest.fixture(scope="module")
def beam_model(tmp_path_factory):
    """spaCy's beam_ner trained a few steps on the same docs."""
    nlp = spacy.blank("en")
    nlp.add_pipe("beam_ner", name="ner", config={"beam_width": 8})  # named as in configs/ner_beam.cfg
    examples = ner_examples(nlp)
    optimizer = nlp.initialize(get_examples=lambda: examples)
    for _ in range(15):
        nlp.update(examples, sgd=optimizer, losses={})
    path = tmp_path_factory.mktemp("beam") / "model"
    nlp.to_disk(path)
    return path


def run_script(model, dev, out, *extra):
    """The script's JSON, run through its main()."""
    assert script.main([str(model), str(dev), "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def predicted_examples(nlp, dev):
    """The dev docs annotated by nlp(text), as spaCy's scorer sees them."""
    return [Example(nlp(gold.text), gold) for gold in DocBin().from_disk(dev).get_docs(nlp.vocab)]


def check_curve(result, examples):
    """t = 0 is spaCy's ents_p and ents_r of the same predictions; recall
    (and what is kept) falls as t rises; probabilities are in [0, 1]."""
    rows = result["thresholds"]
    assert [row["threshold"] for row in rows] == script.THRESHOLDS
    scores = Scorer.score_spans(examples, "ents")
    assert rows[0]["kept"] == result["entities"]["n"] > 0
    assert rows[0]["precision"] == pytest.approx(scores["ents_p"])
    assert rows[0]["recall"] == pytest.approx(scores["ents_r"])
    assert rows[0]["gold"] == result["gold_entities"] == sum(len(eg.reference.ents) for eg in examples)
    recalls = [row["recall"] for row in rows]
    assert all(a >= b for a, b in zip(recalls, recalls[1:]))
    kept = [row["kept"] for row in rows]
    assert all(a >= b for a, b in zip(kept, kept[1:]))
    for row in rows:
        assert row["tp"] + row["fp"] == row["kept"] and row["tp"] + row["fn"] == row["gold"]
    bins = result["entities"]["bins"]
    assert sum(bins["counts"]) == result["entities"]["n"]
    assert all(0.0 <= c <= 1.0 for c in bins["confidence"] if c is not None)
    assert 0.0 <= result["entities"]["ece"] <= 1.0 and 0.0 <= result["entities"]["brier"] <= 1.0


def test_crf_ner_probabilities_are_its_posteriors(crf_model, dev, tmp_path):
    plot = tmp_path / "pr.png"
    result = run_script(crf_model, dev, tmp_path / "crf.json", "--plot", str(plot))
    assert KEYS <= set(result) and result["system"] == "crf_ner" and result["component"] == "crf_ner"
    assert result["temperature"] == pytest.approx(TEMPERATURE)
    assert plot.stat().st_size > 0
    # the same pipeline with store_entity_probs on: span._.crf_prob directly
    nlp = spacy.load(crf_model)
    nlp.get_pipe("crf_ner").cfg["store_entity_probs"] = True  # the saved cfg wins over a config override
    assert nlp.get_pipe("crf_ner").temperature == pytest.approx(TEMPERATURE)
    examples = predicted_examples(nlp, dev)
    spans = [[(e.start, e.end, e.label_, e._.crf_prob) for e in eg.predicted.ents] for eg in examples]
    probs = [p for doc in spans for *_, p in doc]
    assert result["entities"]["n"] == result["predicted_entities"] == len(probs) > 0
    assert all(0.0 <= p <= 1.0 for p in probs)
    direct = Outcomes.join(entity_outcomes(eg, doc) for eg, doc in zip(examples, spans))
    assert result["entities"]["brier"] == pytest.approx(direct.metrics()["brier"], rel=1e-5)
    assert result["entities"]["ece"] == pytest.approx(direct.metrics()["ece"], rel=1e-5, abs=1e-7)
    # and entity by entity, from the script's own reading of the docs
    loaded = spacy.load(crf_model)
    name, system = script.entity_component(loaded)
    gold = [eg.reference for eg in examples]
    fresh = [Example(loaded.make_doc(doc.text), doc) for doc in gold]
    read = script.entity_probabilities(loaded, fresh, name, system)
    assert [[s[:3] for s in doc] for doc in read] == [[s[:3] for s in doc] for doc in spans]
    numpy.testing.assert_allclose([p for doc in read for *_, p in doc], probs, rtol=1e-5)
    # the run leaves the component's settings as they were
    assert loaded.get_pipe("crf_ner").cfg["store_entity_probs"] is False
    check_curve(result, examples)


def test_beam_ner_probabilities_are_its_beam_scores(beam_model, dev, tmp_path):
    result = run_script(beam_model, dev, tmp_path / "beam.json")
    assert KEYS <= set(result) and result["system"] == "beam_ner" and result["component"] == "ner"
    assert "temperature" not in result
    assert result["beam"]["beam_width"] == 8
    nlp = spacy.load(beam_model)
    examples = predicted_examples(nlp, dev)
    assert result["entities"]["n"] == sum(len(eg.predicted.ents) for eg in examples)
    # spaCy's scored_ents of the beams, straight from the component
    ner = nlp.get_pipe("ner")
    docs = [nlp.make_doc(eg.reference.text) for eg in examples]
    beams = ner.beam_parse(docs, beam_width=ner.cfg["beam_width"], beam_density=ner.cfg["beam_density"])
    ner.set_annotations(docs, beams)
    expected = [
        [(e.start, e.end, e.label_, scores[(e.start, e.end, e.label_)]) for e in doc.ents]
        for doc, scores in zip(docs, ner.scored_ents(beams))
    ]
    fresh = [Example(nlp.make_doc(eg.reference.text), eg.reference) for eg in examples]
    read = script.entity_probabilities(nlp, fresh, "ner", "beam_ner")
    assert [[s[:3] for s in doc] for doc in read] == [[s[:3] for s in doc] for doc in expected]
    numpy.testing.assert_allclose(
        [p for doc in read for *_, p in doc], [p for doc in expected for *_, p in doc], rtol=1e-5
    )
    assert all(0.0 <= p <= 1.0 + 1e-6 for doc in read for *_, p in doc)
    check_curve(result, examples)


def test_thresholds_are_those_given(crf_model, dev, tmp_path):
    result = run_script(crf_model, dev, tmp_path / "crf.json", "--thresholds", "0.9", "0", "0.5")
    assert [row["threshold"] for row in result["thresholds"]] == [0.0, 0.5, 0.9]
    with pytest.raises(ValueError, match=r"\[E304\]"):
        script.main([str(crf_model), str(dev), "--json", str(tmp_path / "x.json"), "--thresholds", "1.5"])


def test_a_pipeline_without_entity_probabilities_is_refused():
    with pytest.raises(ValueError, match=r"\[E302\].*crf_tagger"):
        script.entity_component(make_nlp(target="tag"))
    with pytest.raises(ValueError, match=r"\[E302\].*crf_morphologizer"):
        script.entity_component(make_nlp(factory="crf_morphologizer"), "crf_morphologizer")
    blank = spacy.blank("en")
    blank.add_pipe("tagger")
    with pytest.raises(ValueError, match=r"\[E301\]"):
        script.entity_component(blank)
    with pytest.raises(ValueError, match=r"\[E301\]"):
        script.entity_component(blank, "tagger")
    with pytest.raises(ValueError, match=r"\[E301\]"):
        script.entity_component(blank, "nowhere")
    greedy = spacy.blank("en")
    greedy.add_pipe("ner")
    with pytest.raises(ValueError, match=r"\[E303\]"):
        script.entity_component(greedy)
    both = make_nlp(factory="crf_ner")
    both.add_pipe("beam_ner")
    with pytest.raises(ValueError, match=r"\[E301\].*--component"):
        script.entity_component(both)
    assert script.entity_component(both, "beam_ner") == ("beam_ner", "beam_ner")
    assert script.entity_component(both, "crf_ner") == ("crf_ner", "crf_ner")
    tagged = make_nlp(factory="crf_ner")
    tagged.add_pipe("crf_tagger", config={"model": SMALL_MODEL})  # no entities: not a candidate
    assert script.entity_component(tagged) == ("crf_ner", "crf_ner")


def test_the_curve_counts_kept_entities_against_all_gold():
    outcomes = Outcomes(numpy.array([0.95, 0.6, 0.3, 0.99]), numpy.array([True, False, True, True]))
    rows = script.threshold_curve(outcomes, 5, [0.0, 0.5, 0.96, 1.0])
    counts = [(r["kept"], r["tp"], r["fp"], r["fn"]) for r in rows]
    assert counts == [(4, 3, 1, 2), (3, 2, 1, 3), (1, 1, 0, 4), (0, 0, 0, 5)]
    assert rows[0]["precision"] == 0.75 and rows[0]["recall"] == 0.6
    assert rows[0]["f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert rows[-1]["precision"] is None and rows[-1]["recall"] == 0.0 and rows[-1]["f1"] is None


def test_crf_figures_are_those_of_scripts_reliability(crf_model, dev, tmp_path):
    """The ECE, Brier, bins and precision at 0.5 and 0.9 are reliability.py's
    "entities" figures at the stored temperature, on gold tokens as on the docs' own."""
    from benchmarks import reliability

    for extra in ([], ["--gold-preproc"]):
        ours = run_script(crf_model, dev, tmp_path / "crf.json", *extra)["entities"]
        out = tmp_path / "reliability.json"
        argv = [str(crf_model), str(dev), "--output", str(tmp_path / "r.png"), "--json", str(out), *extra]
        assert reliability.main(argv) == 0
        theirs = json.loads(out.read_text())["entities"]["after"]
        assert theirs["temperature"] == pytest.approx(TEMPERATURE)
        assert ours["n"] == theirs["n"] and ours["bins"]["counts"] == theirs["bins"]["counts"]
        assert ours["precision_at"] == theirs["precision_at"]
        for key in ("ece", "brier", "accuracy"):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-6)


def test_pooled_pairs_are_the_sum_of_their_parts(crf_model, dev, tmp_path):
    """--and pools pipelines and their docs (cross-fitting): the entities,
    gold counts and curve counts are those of the runs one by one, joined;
    a second temperature is listed per pair."""
    other = tmp_path / "other"
    nlp = spacy.load(crf_model)
    nlp.get_pipe("crf_ner").temperature = 0.8
    nlp.to_disk(other)
    one = run_script(crf_model, dev, tmp_path / "one.json")
    two = run_script(other, dev, tmp_path / "two.json")
    pooled = run_script(
        crf_model, dev, tmp_path / "pooled.json", "--and", str(other), str(dev), "--plot", str(tmp_path / "pooled.png")
    )
    assert pooled["temperature"] is None
    assert [pair["temperature"] for pair in pooled["pairs"]] == pytest.approx([TEMPERATURE, 0.8])
    assert pooled["model"] == [str(crf_model), str(other)] and pooled["dev"] == [str(dev), str(dev)]
    assert [(pair["model"], pair["dev"]) for pair in pooled["pairs"]] == [
        (str(crf_model), str(dev)),
        (str(other), str(dev)),
    ]
    assert all("outcomes" not in pair for pair in pooled["pairs"])
    assert [pair["predicted_entities"] for pair in pooled["pairs"]] == [
        one["predicted_entities"],
        two["predicted_entities"],
    ]
    assert (tmp_path / "pooled.png").stat().st_size > 0
    assert pooled["entities"]["n"] == one["entities"]["n"] + two["entities"]["n"]
    assert pooled["gold_entities"] == one["gold_entities"] + two["gold_entities"]
    for row, a, b in zip(pooled["thresholds"], one["thresholds"], two["thresholds"]):
        assert (row["kept"], row["tp"], row["gold"]) == (
            a["kept"] + b["kept"],
            a["tp"] + b["tp"],
            a["gold"] + b["gold"],
        )
    brier = one["entities"]["brier"] * one["entities"]["n"] + two["entities"]["brier"] * two["entities"]["n"]
    assert pooled["entities"]["brier"] == pytest.approx(brier / pooled["entities"]["n"], rel=1e-5)
    # the same pipeline twice: one temperature, the figures of one run
    same = run_script(crf_model, dev, tmp_path / "same.json", "--and", str(crf_model), str(dev))
    assert same["temperature"] == pytest.approx(TEMPERATURE)
    assert same["entities"]["ece"] == pytest.approx(one["entities"]["ece"], abs=1e-7)


def test_pooling_different_systems_is_refused(crf_model, beam_model, dev, tmp_path):
    with pytest.raises(ValueError, match=r"\[E307\]"):
        script.main([str(crf_model), str(dev), "--json", str(tmp_path / "x.json"), "--and", str(beam_model), str(dev)])


def test_reliability_pooled_draws_both_records(crf_model, dev, tmp_path, monkeypatch):
    """benchmarks.reliability_pooled: one entity panel, before and after, from
    two of the script's JSONs of the same docs; the pooled temperatures make
    one label; records of different docs are refused."""
    from benchmarks import reliability_pooled

    other = tmp_path / "other"
    nlp = spacy.load(crf_model)
    nlp.get_pipe("crf_ner").temperature = 1.0
    nlp.to_disk(other)
    before = run_script(other, dev, tmp_path / "before.json", "--and", str(other), str(dev))
    after = run_script(crf_model, dev, tmp_path / "after.json", "--and", str(other), str(dev))
    single = run_script(other, dev, tmp_path / "single.json")
    assert reliability_pooled.panel(single)["temperature"] == "1"
    assert reliability_pooled.panel(after)["temperature"] == f"{TEMPERATURE:.3g}, 1"
    drawn = {}
    monkeypatch.setattr(reliability_pooled, "plot", lambda result, path, title: drawn.update(result=result, path=path))
    argv = [str(tmp_path / "before.json"), str(tmp_path / "after.json"), "--plot", str(tmp_path / "r.png")]
    assert reliability_pooled.main(argv) == 0
    assert drawn["path"] == tmp_path / "r.png"
    assert drawn["result"]["entities"]["before"]["bins"] == before["entities"]["bins"]
    assert drawn["result"]["entities"]["after"]["bins"] == after["entities"]["bins"]
    assert drawn["result"]["entities"]["after"]["n"] == 2 * single["entities"]["n"]
    assert before["entities"]["bins"] != after["entities"]["bins"]
    monkeypatch.undo()
    assert reliability_pooled.main(argv) == 0
    assert (tmp_path / "r.png").stat().st_size > 0
    with pytest.raises(SystemExit):
        reliability_pooled.main(
            [str(tmp_path / "single.json"), str(tmp_path / "after.json"), "--plot", str(tmp_path / "x.png")]
        )


def converged_run(tmp_path, model):
    """A folder as benchmarks.converged leaves it: model-best and a run.json
    naming the dev half it chose on (the even dev docs) and the one it scored on."""
    run = tmp_path / "ner_s0"
    shutil.copytree(model, run / "model-best")
    nlp = spacy.blank("en")
    docs = [Example.from_dict(nlp.make_doc(text), {"entities": ents}).reference for text, ents in DEV_DATA]
    select, score = tmp_path / "dev-a.spacy", tmp_path / "dev-b.spacy"
    DocBin(docs=docs[0::2]).to_disk(select)
    DocBin(docs=docs[1::2]).to_disk(score)
    (run / "run.json").write_text(json.dumps({"dev_select": str(select), "dev_score": str(score)}))
    return run, str(select), str(score)


@pytest.mark.parametrize("objective", ["tokens", "entities"])
def test_converged_probabilities_measure_each_half_by_the_copy_calibrated_on_the_other(crf_model, tmp_path, objective):
    from spacy_crf.calibrate import calibrate

    run, select, score = converged_run(tmp_path, crf_model)
    out = tmp_path / "probs.json"
    assert converged_probabilities.main([str(run), "--objective", objective, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["run"] == "ner_s0" and result["objective"] == objective and result["system"] == "crf_ner"
    assert [pair["dev"] for pair in result["pairs"]] == [score, select]
    for pair, fitted_on in zip(result["pairs"], (select, score)):
        fit = calibrate(run / "model-best", fitted_on, objective=objective, write=False)
        assert pair["temperature"] == pytest.approx(fit.after.temperature)
    # the pooled figures are those of the script given the same pairs
    again = run_script(
        run / f"calibrated_{objective}_select",
        score,
        tmp_path / "again.json",
        "--and",
        str(run / f"calibrated_{objective}_score"),
        select,
    )
    assert again["entities"] == result["entities"] and again["thresholds"] == result["thresholds"]
    assert result["gold_entities"] == sum(len(ents) for _, ents in DEV_DATA)


def test_converged_probabilities_as_trained_and_of_beam_ner(crf_model, beam_model, tmp_path):
    run, select, score = converged_run(tmp_path / "crf", crf_model)
    out = tmp_path / "none.json"
    assert converged_probabilities.main([str(run), "--objective", "none", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [pair["temperature"] for pair in result["pairs"]] == pytest.approx([TEMPERATURE, TEMPERATURE])
    assert not list(run.glob("calibrated_*"))
    run, select, score = converged_run(tmp_path / "beam", beam_model)
    out = tmp_path / "beam.json"
    assert converged_probabilities.main([str(run), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["system"] == "beam_ner" and result["objective"] is None
    assert [pair["dev"] for pair in result["pairs"]] == [score, select]
    assert all(pair["beam"]["beam_width"] == 8 for pair in result["pairs"])


def test_a_distilled_student_is_measured_as_trained_and_with_its_entity_temperature(crf_model, tmp_path):
    """benchmarks.distillation probabilities: a student's folder (no run.json)
    gets one naming the corpus' ner dev halves, and its two records are
    converged_probabilities' figures for the same folder."""
    from benchmarks import distillation

    run, select, score = converged_run(tmp_path / "reference", crf_model)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(select, corpus / "uner-dev-a.spacy")
    shutil.copy(score, corpus / "uner-dev-b.spacy")
    student = tmp_path / "ner_distilled_s1"
    shutil.copytree(crf_model, student / "model-best")
    runs = tmp_path / "runs"
    given = ["probabilities", "--head", "distilled", "--seed", "1", "--work", str(student)]
    assert distillation.main(given + ["--corpus", str(corpus), "--runs", str(runs)]) == 0
    halves = json.loads((student / "run.json").read_text())
    assert halves == {"dev_select": str(corpus / "uner-dev-a.spacy"), "dev_score": str(corpus / "uner-dev-b.spacy")}
    for objective in ("none", "entities"):
        record = json.loads((runs / "probabilities" / f"ner_distilled_s1_{objective}.json").read_text())
        reference = tmp_path / f"reference_{objective}.json"
        assert converged_probabilities.main([str(run), "--objective", objective, "--json", str(reference)]) == 0
        assert record["entities"] == json.loads(reference.read_text())["entities"]
        assert record["objective"] == objective
    assert "| student, distilled | 1 |" in distillation.probability_table(runs)
