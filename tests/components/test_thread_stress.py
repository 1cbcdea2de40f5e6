"""One loaded pipeline called from several threads at once (a web server's
thread pool) tags every doc as one thread does (benchmarks.thread_stress),
and leaves torch's thread count as it was: no call may run with the
dropout of training because another call has just finished."""

import random

import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example

from benchmarks.thread_stress import stress
from spacy_crf.nn import quantize as quantization

from ..helpers import SENTENCES, SMALL_MODEL, make_nlp, train

# strong dropout, so that a call that runs in training mode tags differently
DROPOUT_MODEL = {**SMALL_MODEL, "dropout": 0.5, "input_dropout": 0.5}


@pytest.fixture(scope="module")
def saved_pipeline(tmp_path_factory):
    nlp = make_nlp(DROPOUT_MODEL)
    examples = [
        Example(nlp.make_doc(" ".join(words)), Doc(nlp.vocab, words=words, tags=tags)) for words, tags in SENTENCES
    ]
    train(nlp, examples, steps=30)
    path = tmp_path_factory.mktemp("thread_stress") / "pipeline"
    nlp.to_disk(path)
    return path


def texts(n=150, seed=0):
    """n short texts of the training words in random order."""
    rng = random.Random(seed)
    words = sorted({word for sentence, _ in SENTENCES for word in sentence[:-1]})
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + " ." for _ in range(n)]


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_threads_tag_as_one_thread_does(saved_pipeline, quantize):
    if quantize == "int8" and not quantization.available():
        pytest.skip("no int8 kernels in this torch")
    nlp = spacy.load(saved_pipeline, config={"components": {"crf_tagger": {"quantize": quantize}}})
    before = torch.get_num_threads()
    result = stress(nlp, texts(), threads=4, rounds=2)
    assert result["docs"] == 150
    assert result["differing"] == 0, result
    assert result["torch_threads_before"] == result["torch_threads_after"] == before == torch.get_num_threads()
