"""Pipelines saved by spacy-crf 0.1.0 load and predict exactly as they did.

tests/data/legacy-0.1.0/ was written by tests/data/make_legacy.py at the
0.1.0 commit: two small trained pipelines (target "tag" with a known-word
list, chunk_size 6 and window 10; target "ents" with BILUO constraints) and
their predictions, marginals, n-best lists, loss and gradients.
"""
import json
from pathlib import Path

import numpy
import pytest
import spacy
import torch

from spacy_crf.ml import torch_network

from .data.make_legacy import examples

DATA = Path(__file__).parent / "data" / "legacy-0.1.0"


@pytest.fixture(params=["tag", "ents"])
def legacy(request):
    path = DATA / request.param
    expected = json.loads((path / "expected.json").read_text())
    arrays = dict(numpy.load(path / "expected.npz"))
    return request.param, spacy.load(path / "pipeline"), expected, arrays


def test_legacy_pipeline_predicts_as_saved(legacy):
    target, nlp, expected, arrays = legacy
    tagger = nlp.get_pipe("crf_tagger")
    texts = expected["texts"]
    docs = [nlp.make_doc(t) for t in texts]
    prediction = tagger.predict(docs)
    for i, ids in enumerate(prediction.ids):
        assert numpy.array_equal(ids, arrays[f"ids.{i}"])
    for i, probs in enumerate(tagger.marginals(docs)):
        # equal here; another torch build or CPU may round the last bits otherwise
        numpy.testing.assert_allclose(probs, arrays[f"marginals.{i}"], rtol=1e-5, atol=1e-7)
    for got, saved in zip(tagger.nbest(docs, 3), expected["nbest"]):
        assert [tags for tags, _ in got] == [tags for tags, _ in saved]
        assert [score for _, score in got] == pytest.approx([score for _, score in saved], abs=1e-5)
    # saved before batch_words existed: the factory's default fills it in, and
    # the grown batches (one here) annotate as spaCy's batches of one doc did
    assert tagger.cfg["batch_words"] == 32768
    for batch_size, batch_words in ((256, None), (1, 0)):
        annotated = [
            {"tags": [t.tag_ for t in doc], "ents": [[e.start, e.end, e.label_] for e in doc.ents]}
            for doc in nlp.pipe(texts, batch_size=batch_size, component_cfg={"crf_tagger": {"batch_words": batch_words}})
        ]
        assert annotated == expected["annotated"]


def test_legacy_pipeline_loss_and_gradients(legacy):
    target, nlp, expected, arrays = legacy
    tagger = nlp.get_pipe("crf_tagger")
    losses = {}
    tagger.update(examples(nlp, target), sgd=None, losses=losses)
    assert losses["crf_tagger"] == pytest.approx(expected["loss"], rel=1e-6)
    torch_grads = {
        f"grad.torch.{name}": param.grad.numpy()
        for name, param in torch_network(tagger.model).named_parameters()
    }
    saved_torch = {k: v for k, v in arrays.items() if k.startswith("grad.torch.")}
    assert sorted(torch_grads) == sorted(saved_torch)
    for key, grad in torch_grads.items():
        numpy.testing.assert_allclose(grad, saved_torch[key], rtol=1e-5, atol=1e-6)
    thinc_grads = [
        numpy.asarray(node.get_grad(name))
        for node in tagger.model.walk()
        for name in node.param_names
        if node.has_grad(name)
    ]
    saved_thinc = [v for k, v in arrays.items() if k.startswith("grad.thinc.")]
    assert len(thinc_grads) == len(saved_thinc) > 0
    for grad, saved in zip(thinc_grads, saved_thinc):
        numpy.testing.assert_allclose(grad, saved, rtol=1e-5, atol=1e-6)


def test_legacy_pipeline_round_trips_in_the_new_format(legacy, tmp_path):
    _, nlp, expected, arrays = legacy
    nlp.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")
    docs = [again.make_doc(t) for t in expected["texts"]]
    for i, ids in enumerate(again.get_pipe("crf_tagger").predict(docs).ids):
        assert numpy.array_equal(ids, arrays[f"ids.{i}"])
    assert torch.equal(
        torch_network(again.get_pipe("crf_tagger").model).transitions,
        torch_network(nlp.get_pipe("crf_tagger").model).transitions,
    )
