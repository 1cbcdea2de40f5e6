"""One trained pipeline, two devices: on the CPU the component predicts packed
emissions and decodes them with the Numba Viterbi; on a GPU (CupyOps) it pads
them and decodes with the Triton kernels. Both must write the same
annotations, the same scores and the same marginals (GPU only)."""

import numpy
import pytest
from thinc.api import fix_random_seed, get_current_ops, require_gpu

from spacy_crf.nn import CRFScores, PackedScores

from ..helpers import SMALL_MODEL, TRAIN_DATA, make_examples, make_nlp, train
from .test_morphologizer import analyses, morph_examples

FACTORED = {**SMALL_MODEL, "@architectures": "spacy_crf.BiLSTMCRF.v2", "transitions": "factored"}
COMPOSED = {**FACTORED, "@architectures": "spacy_crf.BiLSTMCRF.v3", "emissions": "composed"}
TEXTS = ["I like blue ham .", "They eat green eggs", "ham", "", "Eat green eggs !", " ".join(["green eggs"] * 150)]


def on_gpu(data, build):
    """The pipeline saved as `data`, built again on the GPU (CupyOps; the
    conftest's `thinc_ops_restored` puts the CPU ops back after the test)."""
    require_gpu()
    nlp = build()
    nlp.from_bytes(data)
    return nlp


def assert_close(cpu_marginals, gpu_marginals):
    for cpu_probs, gpu_probs in zip(cpu_marginals, gpu_marginals):
        assert numpy.allclose(cpu_probs, get_current_ops().to_numpy(gpu_probs), atol=5e-3)


def component(nlp):
    """The pipeline's one component: a crf_tagger or a crf_morphologizer."""
    (name,) = nlp.pipe_names
    return nlp.get_pipe(name)


def annotations(nlp, docs):
    if "crf_morphologizer" in nlp.pipe_names:
        return [analyses(doc) for doc in docs]
    return [[t.tag_ for t in doc] for doc in docs]


@pytest.mark.gpu
@pytest.mark.parametrize("setting", ["tag", "factored pos+morph", "composed pos+morph"])
def test_gpu_predictions_equal_the_cpu_path(setting):
    fix_random_seed(0)
    if setting == "tag":
        nlp = make_nlp()
        examples = make_examples(nlp, TRAIN_DATA)
        rebuild = lambda: make_nlp()  # noqa: E731
    else:
        model = COMPOSED if setting.startswith("composed") else FACTORED
        nlp = make_nlp(model=model, factory="crf_morphologizer", target="pos+morph")
        examples = morph_examples(nlp)
        rebuild = lambda: make_nlp(model=model, factory="crf_morphologizer", target="pos+morph")  # noqa: E731
    train(nlp, examples, steps=40)
    tagger = component(nlp)
    docs = [nlp.make_doc(text) for text in TEXTS]
    cpu_batch = tagger.model.predict(docs)
    assert isinstance(cpu_batch.raw, PackedScores)
    cpu_ids = [ids.tolist() for ids in cpu_batch.decode()]
    cpu_scores = cpu_batch.scores
    cpu_marginals = tagger.marginals(docs)
    cpu_annotations = annotations(nlp, nlp.pipe(TEXTS))
    data = nlp.to_bytes()

    gpu_nlp = on_gpu(data, rebuild)
    gpu_tagger = component(gpu_nlp)
    gpu_docs = [gpu_nlp.make_doc(text) for text in TEXTS]
    gpu_batch = gpu_tagger.model.predict(gpu_docs)
    assert isinstance(gpu_batch.raw, CRFScores) and gpu_batch.raw.emissions.is_cuda
    assert [ids.tolist() for ids in gpu_batch.decode()] == cpu_ids
    gpu_scores = gpu_batch.scores
    mask = cpu_scores.mask.numpy()
    assert numpy.allclose(gpu_scores.emissions.cpu().numpy()[mask], cpu_scores.emissions.numpy()[mask], atol=5e-3)
    assert_close(cpu_marginals, gpu_tagger.marginals(gpu_docs))
    assert annotations(gpu_nlp, gpu_nlp.pipe(TEXTS)) == cpu_annotations


@pytest.mark.gpu
def test_gpu_reads_by_sentence_as_the_cpu_does():
    """`by_sentence` on a GPU: the docs cut at their sentences (the
    sentencizer's rule on the host), the same tags and marginals as on the CPU."""
    fix_random_seed(0)
    nlp = make_nlp()
    train(nlp, make_examples(nlp, TRAIN_DATA), steps=40)
    texts = ["I like blue ham . Eat green eggs !", "ham", "", "They eat green eggs ! ham . blue", "eggs ."]
    tagger = nlp.get_pipe("crf_tagger")
    tagger.cfg["by_sentence"] = True
    docs = [nlp.make_doc(text) for text in texts]
    cpu_marginals = tagger.marginals(docs)
    cpu_annotations = annotations(nlp, nlp.pipe(texts))
    data = nlp.to_bytes()

    gpu_nlp = on_gpu(data, make_nlp)
    gpu_tagger = gpu_nlp.get_pipe("crf_tagger")
    gpu_tagger.cfg["by_sentence"] = True
    assert_close(cpu_marginals, gpu_tagger.marginals([gpu_nlp.make_doc(text) for text in texts]))
    assert annotations(gpu_nlp, gpu_nlp.pipe(texts)) == cpu_annotations
