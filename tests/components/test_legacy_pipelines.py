"""Pipelines saved by spacy-crf 0.1.0, 0.3.0 and 1.0.0 load and predict exactly as they did.

tests/data/legacy-1.0.0/ was written by the same script with the 1.0 code:
one pipeline per factory (crf_tagger "tag+pos" with composed emissions,
crf_morphologizer with the character CNN, crf_ner with IOBES and every entity
setting), the newest architectures.

Since 1.0, crf_tagger's 0.x targets "ents" and "pos+morph" build a
CRFEntityRecognizer and a CRFMorphologizer (warning W003): the same labels,
scores and files.

tests/data/legacy-0.1.0/ was written by tests/data/make_legacy.py at the
0.1.0 commit: two small trained pipelines (target "tag" with a known-word
list, chunk_size 6 and window 10; target "ents" with BILUO constraints) and
their predictions, marginals, n-best lists, loss and gradients.

tests/data/legacy-0.3.0/ was written by the same script with the 0.3.0
release's code (commit 6c1990e; `make_legacy.py 0.3.0 --code DIR`): targets
"tag" (known-word list, full transitions of BiLSTMCRF.v2, store_confidence, a
saved temperature), "pos+morph" (factored transitions, HashCharEmbed.v4 with
the character CNN), "tag+pos" (factored transitions, two BiLSTM layers) and
"ents" (BILUO, span posteriors in span._.crf_prob, candidates with their
scores, ents_threshold, rejected spans in the loss, a saved temperature), all
with chunk_size 6 and window 10; and what each predicts (ids, confidences,
entities and their posteriors, candidates), the annotations nlp.pipe writes,
marginals, n-best lists, uncertainty, loss and gradients.
"""

import json
from pathlib import Path
from typing import Any, Dict, NamedTuple

import numpy
import pytest
import spacy
import torch
from spacy.training import Example

from spacy_crf.components import CRFEntityRecognizer, CRFMorphologizer, CRFTagger
from spacy_crf.ml import torch_network

from ..data.make_legacy import RELEASES, annotations, examples

DATA = Path(__file__).parents[1] / "data" / "legacy-0.1.0"
DATA_030 = Path(__file__).parents[1] / "data" / "legacy-0.3.0"
# The tolerances of float outputs, derived from float32 rounding rather than
# measured on one machine: BLAS kernels (OPENBLAS_CORETYPE) and thread counts
# block the network's dot products differently, so two CPUs give different
# last bits, never different functions.
#
# Every probability here is exp(s - log Z) for a path or span score s; the
# forward recursion of a T-token row rounds its running log-sum once per step
# (relative u = 2**-24 each) and a kernel's blocking moves each emission by a
# few u of its size, which reaches s and log Z with weight at most 1 per token.
# So s - log Z moves by at most 2 (s and log Z) x 2 (two machines) x (T + 1) x
# u x |log Z|, and the probability by that much relative to itself (`PROBS`,
# whose bound holds for the fixtures' rows: T <= 12, |log Z| <= 60, 3.6e-4; the
# measured spread across six kernels and 1-2 threads is 5.1e-6). The n-best
# log probabilities and entropies move by the same absolute amount. The loss is
# a small difference (0.1-0.7) of two sums of size |log Z| per doc, so its bound
# is absolute: `loss_tolerance` computes it for the update's own docs.
# Gradients are sums over the examples' ~22 tokens of marginal differences
# (each within PROBS) times activations of size <= 1, so they move by a few
# ROW_BOUND of their own size (rtol), and entries near 0 by the absolute
# resolution the test asks for, 1e-3 of the gradients' scale (~1e-2): far
# below what a changed weight or layer does (it moves them by their size).
U32 = 2.0**-24
ROW_BOUND = 4 * (12 + 1) * U32 * 60
PROBS = {"rtol": ROW_BOUND, "atol": 1e-7}
NBEST_ABS = ROW_BOUND
ENTROPY = {"rtol": ROW_BOUND, "atol": ROW_BOUND}
GRADS = {"rtol": ROW_BOUND, "atol": 1e-5}


def loss_tolerance(component, docs) -> float:
    """The most two float32 evaluations of the CRF loss of `docs` can differ
    by (see above): sum over rows of 4 (T + 1) u |log Z|."""
    from spacy_crf.nn.kernels.dispatch import log_partition

    bound = 0.0
    for _, _, batch in component._scores(docs, temperature=1.0).parts():
        scores = batch.scores
        with torch.no_grad():
            log_z = log_partition(scores).abs().double()
        steps = scores.mask.sum(dim=1).double() + 1
        bound += float((4 * steps * log_z).sum()) * U32
    return bound


# the class each 0.x target of crf_tagger builds since 1.0
CLASSES = {"tag": CRFTagger, "tag+pos": CRFTagger, "pos+morph": CRFMorphologizer, "ents": CRFEntityRecognizer}


def load_legacy(path, target):
    """spacy.load of a 0.x pipeline; the moved targets warn W003."""
    if CLASSES[target] is CRFTagger:
        return spacy.load(path)
    with pytest.warns(UserWarning, match="W003"):
        return spacy.load(path)


@pytest.fixture(params=["tag", "ents"])
def legacy(request):
    path = DATA / request.param
    expected = json.loads((path / "expected.json").read_text())
    arrays = dict(numpy.load(path / "expected.npz"))
    return request.param, load_legacy(path / "pipeline", request.param), expected, arrays


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
        numpy.testing.assert_allclose(probs, arrays[f"marginals.{i}"], **PROBS)
    for got, saved in zip(tagger.nbest(docs, 3), expected["nbest"]):
        assert [tags for tags, _ in got] == [tags for tags, _ in saved]
        assert [score for _, score in got] == pytest.approx([score for _, score in saved], abs=NBEST_ABS)
    # saved before batch_words existed: the factory's default fills it in, and
    # the grown batches (one here) annotate as spaCy's batches of one doc did
    assert tagger.cfg["batch_words"] == 32768
    for batch_size, batch_words in ((256, None), (1, 0)):
        annotated = [
            {"tags": [t.tag_ for t in doc], "ents": [[e.start, e.end, e.label_] for e in doc.ents]}
            for doc in nlp.pipe(
                texts, batch_size=batch_size, component_cfg={"crf_tagger": {"batch_words": batch_words}}
            )
        ]
        assert annotated == expected["annotated"]


def test_legacy_pipeline_loss_and_gradients(legacy):
    target, nlp, expected, arrays = legacy
    tagger = nlp.get_pipe("crf_tagger")
    losses = {}
    tagger.update(examples(nlp, target), sgd=None, losses=losses)
    train = examples(nlp, target)
    assert losses["crf_tagger"] == pytest.approx(
        expected["loss"], abs=loss_tolerance(tagger, [eg.predicted for eg in train])
    )
    assert_gradients_as_saved(tagger, arrays)


def assert_gradients_as_saved(tagger, arrays, tolerance=GRADS, skip=()):
    """The gradients left by tagger.update equal those saved in arrays, but
    for the Thinc parameters whose saved key starts with one in `skip`."""
    torch_grads = {
        f"grad.torch.{name}": param.grad.numpy() for name, param in torch_network(tagger.model).named_parameters()
    }
    saved_torch = {k: v for k, v in arrays.items() if k.startswith("grad.torch.")}
    assert sorted(torch_grads) == sorted(saved_torch)
    for key, grad in torch_grads.items():
        numpy.testing.assert_allclose(grad, saved_torch[key], **tolerance, err_msg=key)
    thinc_grads = [
        (f"grad.thinc.{node.name}.{name}.", numpy.asarray(node.get_grad(name)))
        for node in tagger.model.walk()
        for name in node.param_names
        if node.has_grad(name)
    ]
    saved_thinc = [(k, v) for k, v in arrays.items() if k.startswith("grad.thinc.")]
    assert len(thinc_grads) == len(saved_thinc) > 0
    for (prefix, grad), (key, saved) in zip(thinc_grads, saved_thinc):
        assert key.startswith(prefix) and grad.shape == saved.shape, (key, prefix)
        if not key.startswith(tuple(skip)):
            numpy.testing.assert_allclose(grad, saved, **tolerance, err_msg=key)


def test_legacy_pipeline_round_trips_in_the_new_format(legacy, tmp_path):
    target, nlp, expected, arrays = legacy
    nlp.to_disk(tmp_path / "again")
    again = load_legacy(tmp_path / "again", target)
    docs = [again.make_doc(t) for t in expected["texts"]]
    for i, ids in enumerate(again.get_pipe("crf_tagger").predict(docs).ids):
        assert numpy.array_equal(ids, arrays[f"ids.{i}"])
    assert torch.equal(
        torch_network(again.get_pipe("crf_tagger").model).transitions,
        torch_network(nlp.get_pipe("crf_tagger").model).transitions,
    )


# --- pipelines saved by 0.3.0 ----------------------------------------------

TARGETS_030 = ["tag", "pos+morph", "tag+pos", "ents"]
# --- and by 1.0.0, one per factory (tests/data/legacy-1.0.0, the same script)
DATA_100 = Path(__file__).parents[1] / "data" / "legacy-1.0.0"
FACTORIES_100 = {"crf_tagger": "tag+pos", "crf_morphologizer": "pos+morph", "crf_ner": "ents"}
RELEASED = [("0.3.0", target) for target in TARGETS_030] + [("1.0.0", factory) for factory in FACTORIES_100]


class Saved(NamedTuple):
    """A saved fixture: its component's name, target, pipeline and outputs."""

    name: str
    target: str
    path: Path
    nlp: Any
    expected: Dict[str, Any]
    arrays: Dict[str, numpy.ndarray]


@pytest.fixture(params=RELEASED, ids=[f"{version}-{what}" for version, what in RELEASED])
def released(request):
    """A pipeline saved by 0.3.0 (crf_tagger, by target) or 1.0.0 (by factory)."""
    version, what = request.param
    path = (DATA_030 if version == "0.3.0" else DATA_100) / what
    expected = json.loads((path / "expected.json").read_text())
    arrays = dict(numpy.load(path / "expected.npz"))
    if version == "0.3.0":
        return Saved("crf_tagger", what, path, load_legacy(path / "pipeline", what), expected, arrays)
    return Saved(what, FACTORIES_100[what], path, spacy.load(path / "pipeline"), expected, arrays)


def test_released_fixtures_are_from_their_release():
    for version, what in RELEASED:
        data = DATA_030 if version == "0.3.0" else DATA_100
        made_with = json.loads((data / what / "expected.json").read_text())["made_with"]
        assert made_with["spacy_crf"] == version
        assert made_with["commit"] == RELEASES[version]
        assert not made_with["code_changed"]


FLOATS = ("confidence", "ent_probs", "candidate_scores")


def assert_annotations_equal(got, saved):
    """Docs' annotations (as make_legacy.annotations gives them) are equal,
    their probabilities to the tolerance of PROBS."""
    assert len(got) == len(saved)
    for got_doc, saved_doc in zip(got, saved):
        exact = {k: v for k, v in got_doc.items() if k not in FLOATS}
        assert exact == {k: v for k, v in saved_doc.items() if k not in FLOATS}
        for key in FLOATS:
            assert (key in got_doc) == (key in saved_doc), key
            if key in saved_doc:
                values, saved_values = got_doc[key], saved_doc[key]
                assert [v is None for v in values] == [v is None for v in saved_values], key
                numpy.testing.assert_allclose(
                    [v for v in values if v is not None],
                    [v for v in saved_values if v is not None],
                    **PROBS,
                    err_msg=key,
                )


def test_released_pipeline_predicts_as_saved(released):
    name, target, _, nlp, expected, arrays = released
    tagger = nlp.get_pipe(name)
    assert type(tagger) is CLASSES[target]
    assert list(tagger.tags) == expected["labels"]
    assert tagger.temperature == expected["temperature"]
    texts = expected["texts"]
    docs = [nlp.make_doc(t) for t in texts]

    prediction = tagger.predict(docs)
    assert len(prediction.ids) == len(texts)
    for i, ids in enumerate(prediction.ids):
        assert numpy.array_equal(ids, arrays[f"ids.{i}"]), (target, texts[i])
    if any(k.startswith("confidences.") for k in arrays):
        for i, confidences in enumerate(prediction.confidences):
            numpy.testing.assert_allclose(confidences, arrays[f"confidences.{i}"], **PROBS)
    else:
        assert prediction.confidences is None
    if expected["entities"] is None:
        assert prediction.entities is None and prediction.entity_probs is None
    else:
        assert [[list(e) for e in doc] for doc in prediction.entities] == expected["entities"]
        for i, probs in enumerate(prediction.entity_probs):
            numpy.testing.assert_allclose(probs, arrays[f"entity_probs.{i}"], **PROBS)
    if expected["candidates"] is None:
        assert prediction.candidates is None
    else:
        assert len(prediction.candidates) == len(expected["candidates"])
        for got, saved in zip(prediction.candidates, expected["candidates"]):
            assert [list(c[:3]) for c in got] == [c[:3] for c in saved]
            numpy.testing.assert_allclose([c[3] for c in got], [c[3] for c in saved], **PROBS)

    for i, probs in enumerate(tagger.marginals(docs)):
        numpy.testing.assert_allclose(probs, arrays[f"marginals.{i}"], **PROBS)
    for got, saved in zip(tagger.nbest(docs, 3), expected["nbest"]):
        assert [tags for tags, _ in got] == [tags for tags, _ in saved]
        assert [score for _, score in got] == pytest.approx([score for _, score in saved], abs=NBEST_ABS)
    uncertainty = tagger.uncertainty(docs)
    numpy.testing.assert_allclose([p for p, _ in uncertainty], expected["best_path_prob"], **PROBS)
    for i, (_, entropy) in enumerate(uncertainty):
        numpy.testing.assert_allclose(entropy, arrays[f"entropy.{i}"], **ENTROPY)

    # saved before batch_words existed: the factory's default fills it in, and
    # the grown batches annotate as spaCy's batches of one doc did
    assert tagger.cfg["batch_words"] == 32768
    for batch_size, batch_words in ((256, None), (1, 0)):
        component_cfg = {name: {"batch_words": batch_words}}
        annotated = [
            annotations(doc, tagger.cfg.get("candidates_key"))
            for doc in nlp.pipe(texts, batch_size=batch_size, component_cfg=component_cfg)
        ]
        assert_annotations_equal(annotated, expected["annotated"])


# The byte table's gradient in spaCy's mode (HashCharEmbed.v1-v4, and v5 with
# sum_byte_gradients = false) is not a rounding of one value but a choice:
# spaCy's CharacterEmbed keeps one token's gradient per doc, byte and position
# (the last one written), and unique_rows computes the embedding's Maxout once
# per group of equal rows, giving the group's summed gradient to its first row
# and zero to the others. Which rows are equal depends on the BLAS kernel and
# its thread count: where a row lies in the matrix changes its last bits (the
# hash embedding's own Maxout runs on numpy's BLAS), so "Bob" three times is one
# group on one CPU and three rows on another. A cell then holds one token's
# gradient, a group's sum or 0, whichever the kernel grouped (seen: Prescott
# and SkylakeX against Haswell, sign flips of entries of size 4e-3). What holds
# on every kernel, and is checked instead: the loss and every other gradient
# within their bounds, and the table's gradient only in the cells of the
# (position, byte) pairs that the examples' words have.
SPACY_BYTE_GRADIENT = "grad.thinc.charembed.E."


def keeps_one_byte_gradient(component) -> bool:
    """Whether the component's byte table has spaCy's one-token gradient."""
    from spacy_crf.ml.features import _byte_embed_as_spacy

    return any(node.name == "charembed" and node._func is _byte_embed_as_spacy for node in component.model.walk())


def assert_byte_gradient_in_used_cells(component, arrays):
    """The byte table's gradient is zero outside the cells the saved gradient uses."""
    for node in component.model.walk():
        if node.name == "charembed" and node.has_grad("E"):
            grad = numpy.asarray(node.get_grad("E"))
            saved = next(v for k, v in arrays.items() if k.startswith(SPACY_BYTE_GRADIENT))
            used = numpy.abs(saved).sum(axis=-1) > 0
            assert not numpy.abs(grad[~used]).any()


def as_saved(example):
    """The example as the releases' loss read it: a token annotated with only
    a UPOS or only features ("eggs" of the third sentence: features, no UPOS)
    was unknown, where crf_morphologizer now sums over the bundles that agree
    with the known half; without that half too, the token is unknown under
    both rules, and the loss and gradients are the saved ones."""
    reference = example.reference.copy()
    for token in reference:
        if bool(token.pos) != token.has_morph():
            token.pos = 0
            token.set_morph(None)
    return Example(example.predicted, reference)


def test_released_pipeline_loss_and_gradients(released):
    name, target, _, nlp, expected, arrays = released
    tagger = nlp.get_pipe(name)
    losses = {}
    train = examples(nlp, target, "0.3.0")
    if target == "pos+morph":
        train = [as_saved(eg) for eg in train]
    tolerance = loss_tolerance(tagger, [eg.predicted for eg in train])
    tagger.update(train, sgd=None, losses=losses)
    assert losses[name] == pytest.approx(expected["loss"], abs=tolerance)
    if keeps_one_byte_gradient(tagger):
        assert_gradients_as_saved(tagger, arrays, GRADS, skip=(SPACY_BYTE_GRADIENT,))
        assert_byte_gradient_in_used_cells(tagger, arrays)
    else:
        assert_gradients_as_saved(tagger, arrays, GRADS)


def test_released_pipeline_round_trips_in_the_new_format(released, tmp_path):
    name, target, _, nlp, expected, arrays = released
    nlp.to_disk(tmp_path / "again")
    again = load_legacy(tmp_path / "again", target) if name == "crf_tagger" else spacy.load(tmp_path / "again")
    tagger = again.get_pipe(name)
    assert tagger.temperature == expected["temperature"]
    docs = [again.make_doc(t) for t in expected["texts"]]
    for i, ids in enumerate(tagger.predict(docs).ids):
        assert numpy.array_equal(ids, arrays[f"ids.{i}"])
    for i, probs in enumerate(tagger.marginals(docs)):
        numpy.testing.assert_allclose(probs, arrays[f"marginals.{i}"], **PROBS)
    annotated = [annotations(doc, tagger.cfg.get("candidates_key")) for doc in again.pipe(expected["texts"])]
    assert_annotations_equal(annotated, expected["annotated"])


def test_a_030_config_of_each_target_still_trains(released, tmp_path):
    """The saved configs (0.3.0: crf_tagger with any target, its 0.x settings
    and architectures; 1.0.0: each factory) still initialize and learn, and
    save and load."""
    name, target, path, nlp, expected, arrays = released
    config = spacy.util.load_config(path / "pipeline" / "config.cfg")
    if name != "crf_tagger" or CLASSES[target] is CRFTagger:
        fresh = spacy.util.load_model_from_config(config, auto_fill=True)
    else:
        with pytest.warns(UserWarning, match="W003"):
            fresh = spacy.util.load_model_from_config(config, auto_fill=True)
    train = examples(fresh, target, "0.3.0")
    optimizer = fresh.initialize(lambda: train)
    first = fresh.update(train, sgd=optimizer)[name]
    for _ in range(5):
        last = fresh.update(train, sgd=optimizer)[name]
    assert last < first
    fresh.to_disk(tmp_path / "trained")
    again = load_legacy(tmp_path / "trained", target) if name == "crf_tagger" else spacy.load(tmp_path / "trained")
    docs = [again.make_doc(t) for t in expected["texts"]]
    for got, want in zip(again.get_pipe(name).predict(docs).ids, fresh.get_pipe(name).predict(docs).ids):
        assert numpy.array_equal(got, want)
