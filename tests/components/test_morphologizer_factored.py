"""crf_morphologizer with spacy_crf.BiLSTMCRF.v2 transitions = "factored": the
overfitting-IO test, weights-equal round trips, the same decoding as the
dense reference code on the model's own scores, and the coded errors."""

import pytest
import torch
from thinc.api import fix_random_seed

from spacy_crf.ml import torch_network
from spacy_crf.nn import crf, factored
from spacy_crf.nn.kernels import dispatch

from ..helpers import SMALL_MODEL, TRAIN_DATA, make_examples, make_nlp, train
from .test_morphologizer import (
    TEST_TEXTS,
    assert_pos_morph_overfits_and_round_trips,
    morph_examples,
)

FACTORED = {**SMALL_MODEL, "@architectures": "spacy_crf.BiLSTMCRF.v2", "transitions": "factored"}


@pytest.fixture(scope="module")
def trained():
    fix_random_seed(0)
    nlp = make_nlp(model=FACTORED, factory="crf_morphologizer")
    losses = train(nlp, morph_examples(nlp), steps=100)
    return nlp, losses


def test_overfitting_IO(trained, tmp_path):
    nlp, losses = trained
    assert_pos_morph_overfits_and_round_trips(nlp, losses, FACTORED, tmp_path)


def test_factors_are_the_parameters_and_classes_are_the_upos(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_morphologizer")
    network = torch_network(tagger.model)
    names = {name for name, _ in network.named_parameters()}
    assert {"class_transitions", "leave", "enter", "start", "end"} <= names
    assert "transitions" not in names
    upos = sorted({label.split("POS=")[1].split("|")[0] for label in tagger.labels})
    assert network.class_transitions.shape == (len(upos), len(upos))
    classes = network.label_classes.tolist()
    for label, class_id in zip(tagger.labels, classes):
        assert f"POS={upos[class_id]}" in label


def test_model_scores_decode_as_the_dense_reference(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_morphologizer")
    docs = [nlp.make_doc(text) for text in TEST_TEXTS]
    scores = tagger.model.predict(docs).scores
    assert scores.classes is not None
    dense = scores._replace(classes=None)
    paths, best = dispatch.viterbi_decode(scores)
    ref_paths, ref_best = crf.viterbi_decode(dense)
    assert torch.allclose(best, ref_best, atol=1e-4)
    assert torch.equal(paths[scores.mask], ref_paths[scores.mask])
    assert torch.allclose(factored.log_partition(scores), crf.log_partition(dense), atol=1e-4)
    assert torch.allclose(dispatch.marginals(scores), crf.marginals(dense), atol=1e-5)
    marginals = tagger.marginals(docs)
    assert all(abs(float(m.sum()) - len(doc)) < 1e-3 for m, doc in zip(marginals, docs))
    ranked = tagger.nbest(docs[:2], 3)
    assert len(ranked) == 2 and len(ranked[0]) == 3


def test_a_target_without_classes_is_refused():
    nlp = make_nlp(model=FACTORED, target="tag")
    with pytest.raises(ValueError, match=r"\[E023\]"):
        nlp.initialize(get_examples=lambda: make_examples(nlp, TRAIN_DATA))


def test_unknown_transitions_are_refused():
    with pytest.raises(ValueError, match=r"\[E022\]"):
        make_nlp(model={**FACTORED, "transitions": "low-rank"}, factory="crf_morphologizer")


def test_full_and_factored_files_do_not_mix(trained):
    nlp, _ = trained
    full = make_nlp(model={**FACTORED, "transitions": "full"}, factory="crf_morphologizer")
    with pytest.raises(ValueError, match="transitions"):
        full.from_bytes(nlp.to_bytes())
