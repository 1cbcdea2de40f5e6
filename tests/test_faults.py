"""The component under faults a server or a fine-tuning run meets: predict
never switches the shared network between train() and eval(), non-finite
weights and scores are coded errors, saved files are checked and written
atomically, and fine-tuning learns. Each test fails on spacy-crf 0.3.0."""
import numpy
import pytest
import torch

from spacy_crf.ml import torch_network

from .helpers import make_examples, make_nlp, train

DROPOUT_MODEL_SETTINGS = {"dropout": 0.5, "input_dropout": 0.5}


@pytest.fixture
def dropout_nlp():
    """A small tagger trained with heavy dropout, so that a prediction that
    ran with dropout on would show."""
    from .helpers import SMALL_MODEL

    nlp = make_nlp({**SMALL_MODEL, **DROPOUT_MODEL_SETTINGS})
    train(nlp, make_examples(nlp), steps=30)
    return nlp


def test_predict_leaves_the_network_in_training_mode_and_runs_without_dropout(dropout_nlp):
    """0.3.0 switched the shared network to eval() and back to train() around
    each prediction: a concurrent call ran with dropout on."""
    network = torch_network(dropout_nlp.get_pipe("crf_tagger").model)
    network.train()
    texts = ["I like green eggs", "Eat blue ham and green eggs", "eggs"]
    tagger = dropout_nlp.get_pipe("crf_tagger")
    seen_modes = []  # (the module that ran, the shared network) in training mode?
    handle = network.register_forward_pre_hook(lambda module, _: seen_modes.append((module.training, network.training)))
    try:
        first = [tagger.marginals([dropout_nlp.make_doc(text)])[0] for text in texts]
        again = [tagger.marginals([dropout_nlp.make_doc(text)])[0] for text in texts]
    finally:
        handle.remove()
    assert seen_modes and all(not ran and shared for ran, shared in seen_modes)
    assert network.training
    for a, b in zip(first, again):
        numpy.testing.assert_array_equal(a, b)
    network.eval()
    in_eval = [tagger.marginals([dropout_nlp.make_doc(text)])[0] for text in texts]
    for a, b in zip(first, in_eval):
        numpy.testing.assert_array_equal(a, b)
    with torch.no_grad():
        assert network.dropout.p == 0.5
