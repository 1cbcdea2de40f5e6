"""The torch-free engine (spacy_crf.engine) computes what the torch path computes.

On the pipelines saved by 1.0.0 (crf_tagger "tag+pos" with composed
emissions and factored transitions, two BiLSTM layers; crf_morphologizer with
the character CNN and factored transitions; crf_ner with IOBES constraints
and entity posteriors), on trained pipelines saved in the torch-free format,
and on long docs cut into chunks: the same tags, morphology and entities;
marginals within MARGINALS_ATOL.

The tolerance comes from the computation: both engines compute the same
float32 sums in other orders (oneDNN's LSTM and numpy's BLAS, the same
forward-backward recursion), so a log-score differs by a few float32 units
of its magnitude per step, |alpha| <= ~T * max|score|; for these models
(scores below ~10, rows of up to 30 tokens), 4 * T * 10 * 2**-24 ~ 7e-5
in a log-score at worst, of which a probability p moves by p * 7e-5 <=
(1/4) * 7e-5 for the marginals' share of it that does not cancel in the
normalization: 1e-5 holds with room, and the tests check it.
"""

import os
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_crf.engine import weights
from tests.helpers import TEST_TEXTS, make_examples, make_nlp, train

DATA_100 = Path(__file__).parents[1] / "data" / "legacy-1.0.0"
MARGINALS_ATOL = 1e-5
TEXTS = [
    "I like blue eggs",
    "Anna ate green ham and eggs in New York on Sunday with Bob and Paris eggs",
    "eggs",
    "",
    "Bob ate ham . Anna likes eggs in Paris and green ham in New York on Monday and Sunday with Bob",
]


def run(engine, monkeypatch, fn):
    monkeypatch.setenv("SPACY_CRF_ENGINE", engine)
    return fn()


def outputs(nlp, name, texts):
    component = nlp.get_pipe(name)
    docs = [nlp.make_doc(text) for text in texts]
    tagged = list(nlp.pipe(texts))
    return {
        "ids": [ids.tolist() for ids in component.predict(docs).ids],
        "annotations": [[(t.tag_, t.pos_, str(t.morph)) for t in doc] for doc in tagged],
        "ents": [[(e.start, e.end, e.label_) for e in doc.ents] for doc in tagged],
        "marginals": component.marginals(docs),
        "nbest": component.nbest(docs, 3),
        "uncertainty": component.uncertainty(docs),
    }


def assert_same(torch_out, numpy_out):
    assert numpy_out["ids"] == torch_out["ids"]
    assert numpy_out["annotations"] == torch_out["annotations"]
    assert numpy_out["ents"] == torch_out["ents"]
    for a, b in zip(torch_out["marginals"], numpy_out["marginals"]):
        assert b.dtype == numpy.float32 and a.shape == b.shape
        numpy.testing.assert_allclose(b, a, atol=MARGINALS_ATOL, rtol=0)
    for a, b in zip(torch_out["nbest"], numpy_out["nbest"]):
        assert [tags for tags, _ in b] == [tags for tags, _ in a]
        numpy.testing.assert_allclose([p for _, p in b], [p for _, p in a], atol=1e-4)
    for (pa, ea), (pb, eb) in zip(torch_out["uncertainty"], numpy_out["uncertainty"]):
        assert pb == pytest.approx(pa, abs=1e-4)
        numpy.testing.assert_allclose(eb, ea, atol=1e-4)


@pytest.mark.parametrize("name", ["crf_tagger", "crf_morphologizer", "crf_ner"])
def test_engines_agree_on_saved_pipelines(name, monkeypatch):
    nlp = spacy.load(DATA_100 / name / "pipeline")
    torch_out = run("torch", monkeypatch, lambda: outputs(nlp, name, TEXTS))
    numpy_out = run("numpy", monkeypatch, lambda: outputs(nlp, name, TEXTS))
    assert_same(torch_out, numpy_out)


def test_engines_agree_on_entity_probabilities(monkeypatch):
    """crf_ner's entity posteriors and candidates (the torch code of the
    torch-free engine's scores where torch is installed)."""
    nlp = spacy.load(DATA_100 / "crf_ner" / "pipeline")

    def probs():
        return [
            ([(e.start, e.end, e.label_, e._.crf_prob) for e in doc.ents], list(doc.spans.get("candidates", [])))
            for doc in nlp.pipe(TEXTS)
        ]

    torch_probs = run("torch", monkeypatch, probs)
    numpy_probs = run("numpy", monkeypatch, probs)
    for (a_ents, a_cands), (b_ents, b_cands) in zip(torch_probs, numpy_probs):
        assert [e[:3] for e in b_ents] == [e[:3] for e in a_ents]
        numpy.testing.assert_allclose([e[3] or 0 for e in b_ents], [e[3] or 0 for e in a_ents], atol=1e-5)
        assert [(s.start, s.end, s.label_) for s in b_cands] == [(s.start, s.end, s.label_) for s in a_cands]


def test_engines_agree_on_chunked_docs(monkeypatch):
    """Docs longer than the window are read window by window; empty docs."""
    nlp = make_nlp(window=7)
    train(nlp, make_examples(nlp), steps=20)
    texts = TEST_TEXTS + [" ".join(["I like green eggs and ham"] * 5)]
    torch_out = run("torch", monkeypatch, lambda: outputs(nlp, "crf_tagger", texts))
    numpy_out = run("numpy", monkeypatch, lambda: outputs(nlp, "crf_tagger", texts))
    assert_same(torch_out, numpy_out)


def test_weights_saved_without_torch_format(tmp_path, monkeypatch):
    """A pipeline saves its network as numpy arrays (no torch.save bytes),
    and loads back to the same predictions on either engine."""
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=20)
    nlp.to_disk(tmp_path / "p")
    data = (tmp_path / "p" / "crf_tagger" / "model").read_bytes()
    assert weights.FORMAT.encode() in data
    assert b"PK\x03\x04" not in data  # no zip archive of torch.save
    again = spacy.load(tmp_path / "p")
    for engine in ("torch", "numpy"):
        monkeypatch.setenv("SPACY_CRF_ENGINE", engine)
        assert [t.tag_ for t in again("I like blue ham")] == [t.tag_ for t in nlp("I like blue ham")]


def test_unknown_engine_is_refused(monkeypatch):
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=2)
    monkeypatch.setenv("SPACY_CRF_ENGINE", "onnx")
    with pytest.raises(ValueError, match="SPACY_CRF_ENGINE must be one of"):
        nlp("eggs")


def test_auto_engine_is_torch_where_torch_is_installed(monkeypatch):
    """The default where torch is installed: the engine measured the faster
    (docs/benchmarks.md, "Serving"); without torch, see test_without_torch.py."""
    from spacy_crf.ml import uses_array_engine

    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=2)
    monkeypatch.delenv("SPACY_CRF_ENGINE", raising=False)
    assert os.environ.get("SPACY_CRF_ENGINE") is None
    assert not uses_array_engine(nlp.get_pipe("crf_tagger").model)
    monkeypatch.setenv("SPACY_CRF_ENGINE", "numpy")
    assert uses_array_engine(nlp.get_pipe("crf_tagger").model)


@pytest.mark.parametrize("seed", range(6))
def test_numpy_viterbi_equals_the_kernel(seed):
    """The small-batch numpy recursion gives the Numba kernel's paths and
    scores bit for bit: padded batches, empty rows, length 1, ties."""
    from spacy_crf.engine import viterbi

    rng = numpy.random.default_rng(seed)
    B, T, K = 5, 7, 4
    lengths = rng.integers(0, T + 1, size=B)
    lengths[0], lengths[1] = T, 1
    emissions = rng.integers(-3, 3, size=(B, T, K)).astype(numpy.float32)  # integers: ties
    emissions[numpy.arange(T)[None, :] >= lengths[:, None]] = 0.0
    transitions = rng.integers(-2, 2, size=(K, K)).astype(numpy.float32)
    start, end = rng.standard_normal(K).astype(numpy.float32), rng.standard_normal(K).astype(numpy.float32)
    small = viterbi.viterbi_decode(emissions, lengths, transitions, start, end)
    rows = emissions.reshape(B * T, K)
    paths, best = numpy.empty((B, T), dtype=numpy.int64), numpy.empty((B,), dtype=numpy.float32)
    steps, ranks = numpy.arange(T), numpy.arange(B) * T
    viterbi._kernels().full_kernel(
        rows, steps, ranks, lengths.astype(numpy.int64), transitions, start, end, paths, best
    )
    numpy.testing.assert_array_equal(small[0], paths)
    numpy.testing.assert_array_equal(small[1], best)


@pytest.mark.parametrize(
    "tamper, message",
    [
        (lambda arrays: arrays.update({"start": numpy.zeros(3, dtype="int64")}), "is not an array of floats"),
        (lambda arrays: arrays.update({"end": numpy.zeros(99, dtype="float32")}), "size mismatch|shape"),
        (lambda arrays: arrays.pop("transitions"), "transitions"),
    ],
    ids=["integers", "shape", "missing"],
)
def test_crafted_array_weights_are_refused(tamper, message, tmp_path):
    """Weights in the array format that are not the network's (their
    checksum recomputed, as a crafted file would come) raise E008 naming
    them, and leave the component as it was."""
    import srsly

    from tests.helpers import tags_of, with_checksum

    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=10)
    tagger = nlp.get_pipe("crf_tagger")
    before = tags_of(nlp, TEST_TEXTS)
    msg = srsly.msgpack_loads(tagger.model.to_bytes())
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim_msg = srsly.msgpack_loads(shim_bytes)
            arrays = dict(shim_msg["arrays"])
            tamper(arrays)
            node_shims[i] = weights.dump_network(shim_msg["config"], arrays)
    tagger.to_disk(tmp_path / "bad")
    (tmp_path / "bad" / "model").write_bytes(srsly.msgpack_dumps(msg))
    cfg = srsly.read_json(tmp_path / "bad" / "cfg")
    srsly.write_json(tmp_path / "bad" / "cfg", with_checksum(cfg, (tmp_path / "bad" / "model").read_bytes()))
    with pytest.raises(ValueError, match=rf"(?s)\[E008\].*({message})"):
        tagger.from_disk(tmp_path / "bad")
    assert tags_of(nlp, TEST_TEXTS) == before


def test_serving_shim_reads_arrays_and_refuses_the_rest():
    """The shim that stands in for CRFShim without torch (tested here in
    process, with torch installed): it loads the array format into the
    torch-free engine, names a weight of the wrong shape, and refuses
    torch.save bytes (E051) and training (E050)."""
    import srsly

    from spacy_crf.ml.serving_shim import ServingShim
    from spacy_crf.ml.shim import CRFShim

    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=5)
    shim = nlp.get_pipe("crf_tagger").model.get_ref("output_layer").layers[0].shims[0]
    assert isinstance(shim, CRFShim)
    data = shim.to_bytes()
    settings = {k: v for k, v in shim.cfg["network"].items() if k not in ("n_inputs", "n_labels", "classes", "parts")}
    serving = ServingShim(**settings).from_bytes(data)
    network = serving.array_network()
    assert network.n_labels == shim.network.start.shape[0]
    assert ServingShim(**settings).to_bytes() and serving.to_bytes() == data
    msg = srsly.msgpack_loads(data)
    arrays = dict(msg["arrays"])
    arrays["start"] = numpy.zeros(network.n_labels + 1, dtype="float32")
    with pytest.raises(ValueError, match="'start' has the shape"):
        ServingShim(**settings).from_bytes(weights.dump_network(msg["config"], arrays))
    arrays["start"] = numpy.full(network.n_labels, numpy.nan, dtype="float32")
    assert (
        ServingShim(**settings).from_bytes(weights.dump_network(msg["config"], arrays)).network.first_non_finite()
        == "start"
    )
    old = srsly.msgpack_dumps({"config": msg["config"], "state": b"PK\x03\x04"})
    with pytest.raises(ImportError, match=r"\[E051\]"):
        ServingShim(**settings).from_bytes(old)
    with pytest.raises(ImportError, match=r"\[E050\] Training needs torch"):
        serving.finish_update(None)
