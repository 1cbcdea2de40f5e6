"""crf_tagger as a spaCy component: training, prediction, serialization."""

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf import CRFPrediction, CRFTagger
from spacy_crf.ml import CRFBatch, crf_shim, torch_network
from spacy_crf.nn import CRFScores
from spacy_crf.targets import TOKEN_TARGETS, gold_ids

from ..helpers import (
    SMALL_MODEL,
    TEST_TEXTS,
    TRAIN_DATA,
    UPOS_DATA,
    assert_same_weights,
    make_examples,
    make_nlp,
    tags_of,
    train,
)


@pytest.fixture(scope="module")
def trained():
    # module-scoped fixtures run before the autouse `seeded` one: seed here
    fix_random_seed(0)
    nlp = make_nlp()
    losses = train(nlp, make_examples(nlp))
    return nlp, losses


def test_overfitting_IO(trained, tmp_path):
    nlp, losses = trained
    assert losses["crf_tagger"] < 1.0  # summed over 8 tokens; ~9 at the start
    for text, annots in TRAIN_DATA:
        assert [t.tag_ for t in nlp(text)] == annots["tags"]
    expected = tags_of(nlp, TEST_TEXTS)

    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    assert_same_weights(nlp.get_pipe("crf_tagger"), nlp2.get_pipe("crf_tagger"))
    assert tags_of(nlp2, TEST_TEXTS) == expected

    nlp3 = make_nlp()
    nlp3.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe("crf_tagger"), nlp3.get_pipe("crf_tagger"))
    assert tags_of(nlp3, TEST_TEXTS) == expected

    for batch_size in (1, 2, 3, 64):
        piped = [[t.tag_ for t in doc] for doc in nlp.pipe(TEST_TEXTS, batch_size=batch_size)]
        assert piped == expected


def test_component_serialization_roundtrip(trained, tmp_path):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    fresh = make_nlp().get_pipe("crf_tagger")
    fresh.from_bytes(tagger.to_bytes())
    assert fresh.labels == tagger.labels
    assert fresh.cfg == tagger.cfg
    assert_same_weights(tagger, fresh)
    tagger.to_disk(tmp_path / "tagger")
    fresh2 = make_nlp().get_pipe("crf_tagger").from_disk(tmp_path / "tagger")
    assert_same_weights(tagger, fresh2)


def test_labels_sorted_and_label_data(trained):
    tagger = trained[0].get_pipe("crf_tagger")
    assert tagger.labels == ("J", "N", "V")
    assert tagger.label_data == ("J", "N", "V")
    assert tagger.model.get_ref("output_layer").get_dim("nI") == 32


def test_initialize_with_labels_argument():
    nlp = make_nlp()
    examples = make_examples(nlp)
    tagger = nlp.get_pipe("crf_tagger")
    tagger.initialize(lambda: examples, nlp=nlp, labels=["V", "N", "J", "X"])
    assert tagger.labels == ("V", "N", "J", "X")
    assert tagger.model.get_ref("output_layer").get_dim("nO") == 4


def test_reinitialize_rebuilds_for_new_labels():
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=2)
    examples = make_examples(nlp, TRAIN_DATA + [("go", {"tags": ["Z"]})])
    nlp.initialize(get_examples=lambda: examples)
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.labels == ("J", "N", "V", "Z")
    nlp.update(examples)


def test_predict_shapes_and_empty_docs(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(t) for t in ["", "eggs", "", "I like green eggs"]]
    prediction = tagger.predict(docs)
    assert isinstance(prediction, CRFPrediction) and prediction.confidences is None
    assert [len(g) for g in prediction.ids] == [0, 1, 0, 4]
    assert [len(g) for g in tagger.predict([nlp.make_doc("")] * 3).ids] == [0, 0, 0]
    assert tagger.predict([]).ids == []
    assert [t.tag_ for t in nlp("")] == []
    assert all(t.tag_ in tagger.labels for t in nlp("   eggs  \n\n ham !"))


def test_update_with_only_empty_docs_is_a_no_op():
    nlp = make_nlp()
    optimizer = nlp.initialize(get_examples=lambda: make_examples(nlp))
    examples = [Example.from_dict(nlp.make_doc(""), {"tags": []})]
    assert nlp.update(examples, sgd=optimizer, losses={}) == {"crf_tagger": 0.0}


def test_scores_are_torch_tensors_on_model_device(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    batch = tagger.model.predict([nlp.make_doc("I like eggs"), nlp.make_doc("ham")])
    assert isinstance(batch, CRFBatch) and isinstance(batch.scores, CRFScores)
    assert batch.scores.emissions.shape == (2, 3, 3)
    assert batch.scores.mask.tolist() == [[True, True, True], [True, False, False]]
    assert batch.doc_lengths == [3, 1] and [len(ids) for ids in batch.decode()] == [3, 1]


def test_missing_tags_contribute_no_loss():
    nlp = make_nlp()
    nlp.initialize(get_examples=lambda: make_examples(nlp))
    tagger = nlp.get_pipe("crf_tagger")
    unannotated = [Example(nlp.make_doc("I like ham"), nlp.make_doc("I like ham"))]
    scores = tagger.model.predict([eg.predicted for eg in unannotated])
    loss, d_scores = tagger.get_loss(unannotated, scores)
    assert loss == 0.0
    assert torch.count_nonzero(d_scores.scores.emissions) == 0
    assert torch.count_nonzero(d_scores.scores.transitions) == 0


def test_partial_annotation_trains_on_known_tags_only():
    nlp = make_nlp()
    partial = [
        ("I like green eggs", {"tags": ["N", "", "J", ""]}),
        ("Eat blue ham", {"tags": ["V", "J", "N"]}),
    ]
    examples = make_examples(nlp, partial)
    train(nlp, examples, steps=40)
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.labels == ("J", "N", "V")
    doc = nlp("I like green eggs")
    assert doc[0].tag_ == "N" and doc[2].tag_ == "J"
    # the gradient for an unknown token is its marginal minus the marginal
    # under the gold constraint: no one-hot target is invented for it
    scores = tagger.model.predict([eg.predicted for eg in examples])
    _, d_scores = tagger.get_loss(examples, scores)
    d_emissions = d_scores.scores.emissions
    assert torch.allclose(d_emissions.sum(-1), torch.zeros(2, 4, dtype=d_emissions.dtype), atol=1e-5)


def test_misaligned_gold_tokens_are_missing_values():
    nlp = make_nlp()
    examples = make_examples(nlp)
    nlp.initialize(get_examples=lambda: examples)
    tagger = nlp.get_pipe("crf_tagger")
    predicted = nlp.make_doc("I like greeneggs")
    reference = Doc(nlp.vocab, words=["I", "like", "green", "eggs"], tags=["N", "V", "J", "N"])
    tags, _, _ = gold_ids(TOKEN_TARGETS["tag"].gold_values(Example(predicted, reference)), tagger.labels)
    assert tags.tolist() == [1, 2, -1]
    losses = nlp.update([Example(predicted, reference)])
    assert numpy.isfinite(losses["crf_tagger"])


def test_negative_labels_exclude_a_tag():
    nlp = make_nlp()
    examples = make_examples(nlp)
    nlp.initialize(get_examples=lambda: examples)
    tagger = nlp.get_pipe("crf_tagger")
    reference = Doc(nlp.vocab, words=["eggs", "ham"], tags=["!N", "N"])
    example = Example(nlp.make_doc("eggs ham"), reference)
    tags, excluded, _ = gold_ids(TOKEN_TARGETS["tag"].gold_values(example), tagger.labels)
    assert tags.tolist() == [-1, 1]
    assert excluded.tolist() == [1, -1]


def test_unknown_gold_label_raises(trained):
    nlp, _ = trained
    eg = Example.from_dict(nlp.make_doc("eggs"), {"tags": ["UNSEEN"]})
    with pytest.raises(ValueError, match=r"\[E003\].*UNSEEN"):
        nlp.update([eg])


def test_add_label_after_initialize_checks_the_label(trained):
    tagger = trained[0].get_pipe("crf_tagger")
    assert tagger.add_label("N") == 0
    with pytest.raises(ValueError, match=r"\[E010\]"):
        tagger.add_label(3)


def test_no_labels_raises():
    nlp = make_nlp()
    examples = [Example.from_dict(nlp.make_doc("no tags here"), {})]
    with pytest.raises(ValueError, match=r"\[E005\]"):
        nlp.initialize(get_examples=lambda: examples)


def test_prediction_before_initialize_raises():
    nlp = make_nlp()
    with pytest.raises(ValueError, match=r"\[E009\]"):
        nlp.get_pipe("crf_tagger").predict([nlp.make_doc("eggs")])
    with pytest.raises(ValueError, match=r"initialize"):
        nlp("eggs")


def test_unknown_target_raises():
    with pytest.raises(ValueError, match=r"\[E039\]"):
        make_nlp(target="lemma")


def test_target_pos_writes_upos_and_scores_pos_acc():
    nlp = make_nlp(target="pos")
    examples = make_examples(nlp, UPOS_DATA)
    train(nlp, examples, steps=50)
    doc = nlp("I like green eggs")
    assert [t.pos_ for t in doc] == ["PRON", "VERB", "ADJ", "NOUN"]
    assert all(t.tag_ == "" for t in doc)
    scores = nlp.evaluate(examples)
    assert scores["pos_acc"] == 1.0
    with pytest.raises(ValueError, match=r"\[E002\]"):
        nlp.get_pipe("crf_tagger").add_label("NN")


def test_scorer_reports_tag_acc(trained):
    nlp, _ = trained
    scores = nlp.evaluate(make_examples(nlp))
    assert scores["tag_acc"] == 1.0


@pytest.mark.parametrize("overwrite", [False, True])
def test_overwrite(trained, overwrite):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    doc = Doc(nlp.vocab, words=["I", "like", "green", "eggs"], tags=["X", "", "", "Y"])
    tagger.cfg["overwrite"] = overwrite
    try:
        doc = tagger(doc)
    finally:
        tagger.cfg["overwrite"] = False
    expected = ["N", "V", "J", "N"] if overwrite else ["X", "V", "J", "Y"]
    assert [t.tag_ for t in doc] == expected


def test_annotation_keeps_other_attributes(trained):
    nlp, _ = trained
    doc = Doc(
        nlp.vocab,
        words=["I", "like", "green", "eggs"],
        heads=[1, 1, 3, 1],
        deps=["nsubj", "ROOT", "amod", "obj"],
        pos=["PRON", "VERB", "ADJ", "NOUN"],
    )
    doc.ents = [doc.char_span(7, 17, label="FOOD")]
    doc = nlp.get_pipe("crf_tagger")(doc)
    assert [t.dep_ for t in doc] == ["nsubj", "ROOT", "amod", "obj"]
    assert [t.head.i for t in doc] == [1, 1, 3, 1]
    assert [t.pos_ for t in doc] == ["PRON", "VERB", "ADJ", "NOUN"]
    assert [e.text for e in doc.ents] == ["green eggs"]
    assert [t.tag_ for t in doc] == ["N", "V", "J", "N"]


def test_crf_transitions_are_trained(trained):
    tagger = trained[0].get_pipe("crf_tagger")
    network = torch_network(tagger.model)
    assert torch.count_nonzero(network.transitions) > 0


def test_softmax_ablation_keeps_transitions_at_zero():
    nlp = make_nlp(model={**SMALL_MODEL, "crf": False})
    train(nlp, make_examples(nlp), steps=40)
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    assert torch.count_nonzero(network.transitions) == 0
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]


def test_depth_zero_is_a_crf_on_the_tok2vec():
    nlp = make_nlp(model={**SMALL_MODEL, "depth": 0})
    train(nlp, make_examples(nlp), steps=60)
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    assert network.lstm is None
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]


def test_with_shared_tok2vec_listener(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec")
    listener_model = {
        **SMALL_MODEL,
        "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "*"},
    }
    nlp.add_pipe("crf_tagger", config={"model": listener_model})
    examples = make_examples(nlp)
    train(nlp, examples, steps=60)
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]
    expected = tags_of(nlp, TEST_TEXTS)
    nlp.to_disk(tmp_path)
    nlp2 = spacy.load(tmp_path)
    assert tags_of(nlp2, TEST_TEXTS) == expected
    assert_same_weights(nlp.get_pipe("crf_tagger"), nlp2.get_pipe("crf_tagger"))


def test_hash_char_embed_config(tmp_path):
    model = {
        **SMALL_MODEL,
        "tok2vec": {
            "@architectures": "spacy.Tok2Vec.v2",
            "embed": {
                "@architectures": "spacy_crf.HashCharEmbed.v1",
                "width": 32,
                "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
                "rows": [500, 100, 200, 200],
                "nM": 8,
                "nC": 4,
                "include_static_vectors": False,
            },
            "encode": {
                "@architectures": "spacy.MaxoutWindowEncoder.v2",
                "width": 32,
                "depth": 1,
                "window_size": 1,
                "maxout_pieces": 3,
            },
        },
    }
    nlp = make_nlp(model=model)
    train(nlp, make_examples(nlp), steps=60)
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]
    nlp.to_disk(tmp_path)
    assert tags_of(spacy.load(tmp_path), TEST_TEXTS) == tags_of(nlp, TEST_TEXTS)


def test_corrupt_model_bytes_leave_component_unchanged(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    before = tags_of(nlp, TEST_TEXTS)
    data = tagger.to_bytes()
    for bad in (b"", b"not msgpack at all", data[: len(data) // 2]):
        with pytest.raises(ValueError, match=r"\[E007\]"):
            tagger.from_bytes(bad)
        assert tags_of(nlp, TEST_TEXTS) == before


def test_mismatched_config_leaves_component_unchanged(trained, tmp_path):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    before = tags_of(nlp, TEST_TEXTS)
    other = make_nlp(model={**SMALL_MODEL, "hidden_width": 8})
    train(other, make_examples(other), steps=1)
    with pytest.raises(ValueError, match=r"\[E008\]"):
        tagger.from_bytes(other.get_pipe("crf_tagger").to_bytes())
    assert tags_of(nlp, TEST_TEXTS) == before
    assert tagger.model.get_ref("output_layer").get_dim("nI") == 32
    # a model trained with other labels: the weights do not fit the label count
    (tmp_path / "t").mkdir()
    tagger.to_disk(tmp_path / "t")
    fresh = make_nlp(model={**SMALL_MODEL, "hidden_width": 8}).get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[E008\]"):
        fresh.from_disk(tmp_path / "t")
    assert fresh.labels == ()


def test_missing_model_file_raises(trained, tmp_path):
    tagger = trained[0].get_pipe("crf_tagger")
    tagger.to_disk(tmp_path)
    (tmp_path / "model").unlink()
    with pytest.raises(ValueError, match=r"\[E007\]"):
        make_nlp().get_pipe("crf_tagger").from_disk(tmp_path)


def test_direct_construction():
    nlp = spacy.blank("en")
    model = spacy.registry.resolve({"model": SMALL_MODEL})["model"]
    tagger = CRFTagger(nlp.vocab, model)
    assert tagger.name == "crf_tagger" and tagger.labels == ()


@pytest.mark.gpu
def test_training_and_decoding_on_gpu():
    from thinc.api import get_current_ops, require_gpu, set_current_ops

    cpu_ops = get_current_ops()
    require_gpu()
    try:
        nlp = make_nlp()
        losses = train(nlp, make_examples(nlp), steps=60)
        tagger = nlp.get_pipe("crf_tagger")
        scores = tagger.model.predict([nlp.make_doc("I like eggs")]).scores
        assert scores.emissions.is_cuda and scores.mask.is_cuda
        assert losses["crf_tagger"] < 1.0  # summed over 8 tokens; ~9 at the start
        assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]
    finally:
        set_current_ops(cpu_ops)  # use_ops() is a context manager: a bare call restores nothing


def test_marginals(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(t) for t in ["I like green eggs", "", "eggs"]]
    probs = tagger.marginals(docs)
    assert [p.shape for p in probs] == [(4, 3), (0, 3), (1, 3)]
    for p, ids in zip(probs, tagger.predict(docs).ids):
        assert numpy.allclose(p.sum(-1), 1.0, atol=1e-5)
        # on training data the decoded tag is also the most probable one
        assert p.argmax(-1).tolist() == ids.tolist()
    tagger.cfg["window"] = 2
    try:
        windowed = tagger.marginals([nlp.make_doc("I like green eggs")])[0]
        assert windowed.shape == (4, 3)
        assert numpy.allclose(windowed[:2], tagger.marginals([nlp.make_doc("I like")])[0])
    finally:
        tagger.cfg["window"] = 8192


def test_store_confidence(trained):
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    assert nlp("I like green eggs")[0]._.crf_confidence is None
    tagger.cfg["store_confidence"] = True
    try:
        docs = list(nlp.pipe(["I like green eggs", "", "eggs"]))
        probs = tagger.marginals([nlp.make_doc(d.text) for d in docs])
        for doc, p in zip(docs, probs):
            labels = [tagger.labels.index(t.tag_) for t in doc]
            expected = [float(p[i, y]) for i, y in enumerate(labels)]
            assert [t._.crf_confidence for t in doc] == pytest.approx(expected, abs=1e-6)
            assert all(0.0 < t._.crf_confidence <= 1.0 for t in doc)
        assert [t.tag_ for t in docs[0]] == ["N", "V", "J", "N"]
    finally:
        tagger.cfg["store_confidence"] = False


def test_nbest(trained):
    import itertools
    import math

    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(t) for t in ["I like green eggs", "", "eggs"]]
    results = tagger.nbest(docs, 5)
    assert [len(r) for r in results] == [5, 1, 3]
    assert results[1] == [([], 0.0)]
    assert results[0][0][0] == ["N", "V", "J", "N"]
    for doc, ranked in zip(docs, results):
        probs = [lp for _, lp in ranked]
        assert probs == sorted(probs, reverse=True)
        assert all(len(tags) == len(doc) for tags, _ in ranked)
    # exact: the 3 paths of a one-token doc carry all the probability
    assert math.isclose(sum(math.exp(lp) for _, lp in results[2]), 1.0, rel_tol=1e-4)
    assert [t for t, _ in tagger.nbest(docs, 1)[0]] == [["N", "V", "J", "N"]]
    # windowed docs: the k best of the whole doc are the best sums over windows
    doc = nlp.make_doc("I like green eggs")
    whole = tagger.nbest([doc], 4)[0]
    parts = [tagger.nbest([nlp.make_doc(t)], 4)[0] for t in ["I like", "green eggs"]]
    expected = sorted(((a + b, la + lb) for (a, la), (b, lb) in itertools.product(*parts)), key=lambda x: -x[1])[:4]
    tagger.cfg["window"] = 2
    try:
        got = tagger.nbest([doc], 4)[0]
    finally:
        tagger.cfg["window"] = 8192
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [lp for _, lp in got] == pytest.approx([lp for _, lp in expected], abs=1e-5)
    # chunked docs: the best of the k equals the Viterbi path of the chunks
    layer = tagger.model.get_ref("output_layer")
    layer.attrs["chunk_size"] = 2
    try:
        ranked = tagger.nbest([doc], 6)[0]
        viterbi = [tagger.labels[i] for i in tagger.predict([doc]).ids[0]]
    finally:
        layer.attrs["chunk_size"] = 512
    assert ranked[0][0] == viterbi
    assert [lp for _, lp in ranked] == sorted((lp for _, lp in ranked), reverse=True)
    assert len({tuple(t) for t, _ in ranked}) == 6
    assert whole[0][0] == ["N", "V", "J", "N"]


def test_averaged_weights_reach_the_torch_network():
    """With use_averages, nlp.use_params swaps the optimizer's averages into the
    torch parameters too (Thinc's PyTorchShim keys them differently), and puts
    the trained weights back afterwards."""
    nlp = make_nlp()
    examples = make_examples(nlp)
    nlp.initialize(get_examples=lambda: examples)
    optimizer = spacy.util.registry.resolve(
        {"o": {"@optimizers": "Adam.v1", "learn_rate": 0.01, "use_averages": True}}
    )["o"]
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    shim = crf_shim(nlp.get_pipe("crf_tagger").model)
    network = shim.network
    trained = {k: v.clone() for k, v in network.state_dict().items()}
    averages = {k[1]: v for k, v in optimizer.averages.items() if k[0] == shim.id}
    assert "transitions" in averages and "lstm.weight_hh_l0" in averages
    with nlp.use_params(optimizer.averages):
        for name, value in averages.items():
            assert numpy.allclose(network.state_dict()[name].numpy(), value)
        assert not torch.equal(network.transitions, trained["transitions"])
    for name, value in network.state_dict().items():
        assert torch.equal(value, trained[name])


def test_add_label_then_initialize_without_examples():
    """As with spaCy's tagger: the added labels are kept, and nlp.initialize()
    with no data (as `spacy init labels` pipelines do) builds the model."""
    nlp = make_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    for label in ("V", "N", "J"):
        assert tagger.add_label(label) == 1
    assert tagger.add_label("N") == 0
    nlp.initialize()
    assert tagger.labels == ("J", "N", "V")
    assert tagger.model.get_ref("output_layer").get_dim("nO") == 3
    assert all(t.tag_ in tagger.labels for t in nlp("I like green eggs"))
    optimizer = nlp.resume_training()
    examples = make_examples(nlp)
    for _ in range(40):
        nlp.update(examples, sgd=optimizer)
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]


def test_add_label_joins_the_labels_of_the_examples():
    nlp = make_nlp()
    nlp.get_pipe("crf_tagger").add_label("X")
    nlp.initialize(lambda: make_examples(nlp))
    assert nlp.get_pipe("crf_tagger").labels == ("J", "N", "V", "X")


def test_initialize_labels_from_the_config():
    """[initialize.components.crf_tagger.labels], as written by `spacy init labels`."""
    nlp = make_nlp()
    nlp.config["initialize"]["components"]["crf_tagger"] = {"labels": ["V", "N", "J"]}
    nlp.initialize(lambda: make_examples(nlp))
    assert nlp.get_pipe("crf_tagger").labels == ("V", "N", "J")
    with pytest.raises(ValueError, match=r"\[E012\]"):
        nlp.get_pipe("crf_tagger").initialize(lambda: make_examples(nlp), labels=[])


@pytest.mark.parametrize("store_confidence", [False, True])
def test_set_annotations_of_predict_is_what_nlp_does(trained, store_confidence):
    """spaCy's contract: nlp(doc) is set_annotations(docs, predict(docs))."""
    nlp, _ = trained
    tagger = nlp.get_pipe("crf_tagger")
    tagger.cfg["store_confidence"] = store_confidence
    try:
        for text in TEST_TEXTS:  # one doc: nlp(text)
            doc = nlp.make_doc(text)
            prediction = tagger.predict([doc])
            assert (prediction.confidences is not None) == store_confidence
            tagger.set_annotations([doc], prediction)
            direct = nlp(text)
            assert [t.tag_ for t in doc] == [t.tag_ for t in direct]
            assert [t._.crf_confidence for t in doc] == [t._.crf_confidence for t in direct]
            if store_confidence and len(doc):
                assert all(0.0 < t._.crf_confidence <= 1.0 for t in doc)
        docs = [nlp.make_doc(t) for t in TEST_TEXTS]  # one batch: nlp.pipe
        tagger.set_annotations(docs, tagger.predict(docs))
        piped = list(nlp.pipe(TEST_TEXTS, batch_size=len(TEST_TEXTS)))
        assert [[t.tag_ for t in d] for d in piped] == [[t.tag_ for t in d] for d in docs]
        assert [[t._.crf_confidence for t in d] for d in piped] == [[t._.crf_confidence for t in d] for d in docs]
    finally:
        tagger.cfg["store_confidence"] = False


JOINT_DATA = [
    ("I like green eggs", {"tags": ["N", "V", "J", "N"], "pos": ["PRON", "VERB", "ADJ", "NOUN"]}),
    ("Eat blue ham", {"tags": ["V", "J", "N"], "pos": ["VERB", "ADJ", "NOUN"]}),
    ("I eat", {"tags": ["N", "V"], "pos": ["PRON", "VERB"]}),
]


def test_joint_target_writes_tag_and_pos(tmp_path):
    nlp = make_nlp(target="tag+pos")
    examples = make_examples(nlp, JOINT_DATA)
    train(nlp, examples, steps=60)
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.labels == ("J|ADJ", "N|NOUN", "N|PRON", "V|VERB")
    doc = nlp("I like green eggs")
    assert [(t.tag_, t.pos_) for t in doc] == [("N", "PRON"), ("V", "VERB"), ("J", "ADJ"), ("N", "NOUN")]
    scores = nlp.evaluate(examples)
    assert scores["tag_acc"] == 1.0 and scores["pos_acc"] == 1.0
    nlp.to_disk(tmp_path)
    assert [(t.tag_, t.pos_) for t in spacy.load(tmp_path)("Eat green ham")] == [
        ("V", "VERB"),
        ("J", "ADJ"),
        ("N", "NOUN"),
    ]
    with pytest.raises(ValueError, match=r"\[E002\]"):
        make_nlp(target="tag+pos").get_pipe("crf_tagger").add_label("NN|NOUNISH")


def test_joint_target_missing_half_is_unknown():
    nlp = make_nlp(target="tag+pos")
    nlp.initialize(lambda: make_examples(nlp, JOINT_DATA))
    half = Example.from_dict(nlp.make_doc("I eat"), {"tags": ["N", "V"], "pos": ["PRON", ""]})
    values = TOKEN_TARGETS["tag+pos"].gold_values(half)
    assert values == ["N|PRON", ""]
    tags, _, _ = gold_ids(values, nlp.get_pipe("crf_tagger").labels)
    assert tags.tolist() == [2, -1]


def test_loading_a_model_with_other_labels_into_a_trained_component(trained, tmp_path):
    """The network is rebuilt to the file's label count, as from a fresh component."""
    nlp, _ = trained
    other = make_nlp()
    train(other, make_examples(other, TRAIN_DATA + [("go", {"tags": ["Z"]})]), steps=5)
    other.get_pipe("crf_tagger").to_disk(tmp_path / "other")
    target = make_nlp()
    target.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    target.get_pipe("crf_tagger").from_disk(tmp_path / "other")
    assert target.get_pipe("crf_tagger").labels == ("J", "N", "V", "Z")
    assert tags_of(target, TEST_TEXTS) == tags_of(other, TEST_TEXTS)
    assert_same_weights(target.get_pipe("crf_tagger"), other.get_pipe("crf_tagger"))


def test_optimizer_updates_the_torch_weights_in_place():
    """The optimizer writes into the parameters' memory: the LSTM's weights
    stay the one buffer cuDNN reads (no copy per call on a GPU), and every
    step still changes them."""
    nlp = make_nlp()
    optimizer = nlp.initialize(get_examples=lambda: make_examples(nlp))
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    pointers = {name: p.data_ptr() for name, p in network.named_parameters()}
    before = {name: p.detach().clone() for name, p in network.named_parameters()}
    nlp.update(make_examples(nlp), sgd=optimizer)
    for name, param in network.named_parameters():
        assert param.data_ptr() == pointers[name], name
        if param.requires_grad:
            assert not torch.equal(param.detach(), before[name]), name
        assert param.grad is None or not param.grad.any(), name
