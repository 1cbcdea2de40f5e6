"""Bad input, long docs, processes, determinism: nothing crashes, nothing is lost."""

import io
import pickle

import numpy
import pytest
import spacy
import srsly
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.ml import torch_network
from spacy_crf.ml.crf_batch import chunk_lengths, grid_index

from ..helpers import (
    SMALL_MODEL,
    TEST_TEXTS,
    assert_same_weights,
    make_examples,
    make_nlp,
    model_weights,
    tags_of,
    train,
    trained_nlp,
    with_checksum,
)

WORDS = ["I", "like", "green", "eggs", "Eat", "blue", "ham", "and", "!"]


@pytest.fixture(scope="module")
def trained():
    return trained_nlp()


def test_chunk_lengths():
    assert chunk_lengths([0, 3, 10], 4) == [0, 3, 4, 3, 3]
    assert chunk_lengths([5, 1000], 0) == [5, 1000]
    assert chunk_lengths([1025], 512) == [342, 342, 341]
    assert sum(chunk_lengths([50_000], 512)) == 50_000
    assert max(chunk_lengths([50_000], 512)) <= 512


def test_grid_index():
    assert grid_index([2, 0, 3], 4).tolist() == [0, 1, 8, 9, 10]


def set_chunk_size(nlp, size):
    nlp.get_pipe("crf_tagger").model.get_ref("output_layer").attrs["chunk_size"] = size


def test_docs_that_fit_equal_the_unchunked_result(trained):
    words = (WORDS * 50)[:400]
    unchunked_doc = Doc(trained.vocab, words=words)
    set_chunk_size(trained, 0)
    try:
        unchunked = [t.tag_ for t in trained(unchunked_doc)]
        set_chunk_size(trained, 400)
        assert [t.tag_ for t in trained(Doc(trained.vocab, words=words))] == unchunked
        set_chunk_size(trained, 100)
        chunked = [t.tag_ for t in trained(Doc(trained.vocab, words=words))]
        assert len(chunked) == 400
    finally:
        set_chunk_size(trained, 512)


def test_chunked_batch_matches_docs_decoded_one_by_one(trained):
    set_chunk_size(trained, 7)
    try:
        texts = ["I like green eggs and ham and blue eggs !", "", "eggs", "Eat blue ham " * 5]
        one_by_one = [[t.tag_ for t in trained(text)] for text in texts]
        batched = [[t.tag_ for t in doc] for doc in trained.pipe(texts, batch_size=4)]
        assert batched == one_by_one
    finally:
        set_chunk_size(trained, 512)


def test_training_on_long_chunked_docs():
    nlp = make_nlp(model={**SMALL_MODEL, "chunk_size": 5})
    data = [(" ".join(["I like green eggs"] * 4), {"tags": ["N", "V", "J", "N"] * 4})]
    examples = make_examples(nlp, data)
    losses = train(nlp, examples, steps=60)
    assert losses["crf_tagger"] < 2.0
    assert [t.tag_ for t in nlp(data[0][0])] == data[0][1]["tags"]


def test_very_long_doc(trained):
    words = [WORDS[i % len(WORDS)] for i in range(50_000)]
    doc = trained(Doc(trained.vocab, words=words))
    labels = set(trained.get_pipe("crf_tagger").labels)
    assert len(doc) == 50_000 and all(t.tag_ in labels for t in doc)


def test_unicode_of_every_script(trained):
    texts = [
        "Ελληνικά κείμενα",
        "Русский текст",
        "العربية نص",
        "עברית טקסט",
        "हिन्दी पाठ",
        "中文文本测试",
        "日本語のテキスト",
        "한국어 텍스트",
        "ไทยข้อความ",
        "🙂🙃 emoji 👍🏽",
        "a\u0301 combining",
        "\u200b zero width",
        "ʕ•ᴥ•ʔ",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    ]
    labels = set(trained.get_pipe("crf_tagger").labels)
    for doc in trained.pipe(texts):
        assert all(t.tag_ in labels for t in doc)


def test_whitespace_and_one_token_docs(trained):
    labels = set(trained.get_pipe("crf_tagger").labels)
    for text in [" ", "\n\n", "\t", "a", "   a   ", "!"]:
        doc = trained(text)
        assert all(t.tag_ in labels for t in doc)


def test_nan_scores_raise_a_coded_error():
    nlp = make_nlp()
    optimizer = nlp.initialize(lambda: make_examples(nlp))
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    with torch.no_grad():
        network.emission.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match=r"\[E006\] The model's scores"):
        nlp.update(make_examples(nlp), sgd=optimizer)


def test_inf_transitions_raise_a_coded_error():
    nlp = make_nlp()
    optimizer = nlp.initialize(lambda: make_examples(nlp))
    network = torch_network(nlp.get_pipe("crf_tagger").model)
    with torch.no_grad():
        network.transitions.fill_(float("inf"))
    with pytest.raises(ValueError, match=r"\[E006\]"):
        nlp.update(make_examples(nlp), sgd=optimizer)


def test_pickle_roundtrip(trained):
    expected = tags_of(trained, TEST_TEXTS)
    clone = pickle.loads(pickle.dumps(trained))
    assert tags_of(clone, TEST_TEXTS) == expected
    assert_same_weights(trained.get_pipe("crf_tagger"), clone.get_pipe("crf_tagger"))


def test_multiprocess_pipe_equals_single_process(trained):
    texts = TEST_TEXTS * 4
    single = [[t.tag_ for t in doc] for doc in trained.pipe(texts)]
    multi = [[t.tag_ for t in doc] for doc in trained.pipe(texts, n_process=2, batch_size=3)]
    assert multi == single


def test_two_pipelines_do_not_share_state(trained):
    other = make_nlp()
    optimizer = other.initialize(lambda: make_examples(other))
    before = tags_of(trained, TEST_TEXTS)
    weights_before = model_weights(trained.get_pipe("crf_tagger"))
    for _ in range(5):
        other.update(make_examples(other), sgd=optimizer)
    assert tags_of(trained, TEST_TEXTS) == before
    for a, b in zip(weights_before, model_weights(trained.get_pipe("crf_tagger"))):
        assert numpy.array_equal(a, b)


def test_same_seed_gives_same_weights_and_predictions():
    runs = []
    for _ in range(2):
        fix_random_seed(7)
        nlp = make_nlp()
        train(nlp, make_examples(nlp), steps=10)
        runs.append(nlp)
    assert_same_weights(runs[0].get_pipe("crf_tagger"), runs[1].get_pipe("crf_tagger"))
    assert tags_of(runs[0], TEST_TEXTS) == tags_of(runs[1], TEST_TEXTS)


def test_label_count_mismatch_leaves_component_unchanged(trained):
    tagger = trained.get_pipe("crf_tagger")
    before = tags_of(trained, TEST_TEXTS)
    other = make_nlp()
    examples = make_examples(
        other, [("go", {"tags": ["Z"]}), ("I like", {"tags": ["N", "V"]}), ("eat", {"tags": ["Q"]})]
    )
    train(other, examples, steps=1)
    data = other.get_pipe("crf_tagger").to_bytes(exclude=["cfg"])
    with pytest.raises(ValueError, match=r"\[E008\]"):
        tagger.from_bytes(data, exclude=["cfg"])
    assert tags_of(trained, TEST_TEXTS) == before
    assert tagger.labels == ("J", "N", "V")


def test_input_width_mismatch_leaves_component_unchanged(trained):
    tagger = trained.get_pipe("crf_tagger")
    before = tags_of(trained, TEST_TEXTS)
    wide = {**SMALL_MODEL, "tok2vec": {**SMALL_MODEL["tok2vec"], "width": 48}}
    other = make_nlp(model=wide)
    train(other, make_examples(other), steps=1)
    with pytest.raises(ValueError, match=r"\[E008\]"):
        tagger.from_bytes(other.get_pipe("crf_tagger").to_bytes())
    assert tags_of(trained, TEST_TEXTS) == before
    assert tagger.model.get_ref("output_layer").get_dim("nI") == 32


def test_foreign_model_file_raises(trained, tmp_path):
    tagger = trained.get_pipe("crf_tagger")
    before = tags_of(trained, TEST_TEXTS)
    foreign = spacy.blank("en")
    foreign.add_pipe("tagger")
    foreign.initialize(lambda: make_examples(foreign))
    with pytest.raises(ValueError, match=r"\[E00[78]\]"):
        tagger.from_bytes(foreign.get_pipe("tagger").to_bytes())
    assert tags_of(trained, TEST_TEXTS) == before


annotations = st.lists(
    st.lists(st.tuples(st.sampled_from(WORDS), st.one_of(st.none(), st.integers(0, 4))), max_size=8),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=annotations, n_labels=st.integers(1, 5))
def test_random_docs_and_partial_annotation_never_crash(data, n_labels):
    """Random docs, label sets and missing tags: training and tagging work,
    one known tag per token, and the decoded path is the best one."""
    labels = [f"L{i}" for i in range(n_labels)]
    nlp = make_nlp()
    vocab = nlp.vocab
    examples = []
    for tokens in data:
        words = [w for w, _ in tokens]
        tags = [labels[t % n_labels] if t is not None else "" for _, t in tokens]
        doc = Doc(vocab, words=words, tags=tags) if words else Doc(vocab, words=[])
        examples.append(Example(Doc(vocab, words=words), doc))
    tagger = nlp.get_pipe("crf_tagger")
    tagger.initialize(lambda: examples, nlp=nlp, labels=labels)
    optimizer = nlp.create_optimizer()
    losses = nlp.update(examples, sgd=optimizer)
    assert losses["crf_tagger"] >= 0 and numpy.isfinite(losses["crf_tagger"])
    docs = [Doc(vocab, words=[w for w, _ in tokens]) for tokens in data]
    guesses = tagger.predict(docs).ids
    assert [len(g) for g in guesses] == [len(d) for d in docs]
    tagger.set_annotations(docs, guesses)
    assert all(t.tag_ in labels for d in docs for t in d)


def test_window_tags_long_docs_window_by_window(trained):
    tagger = trained.get_pipe("crf_tagger")
    words = (WORDS * 20)[:120]
    tagger.cfg["window"] = 0
    whole_50 = [t.tag_ for t in trained(Doc(trained.vocab, words=words[:50]))]
    parts = [[t.tag_ for t in trained(Doc(trained.vocab, words=words[a : a + 50]))] for a in (0, 50, 100)]
    tagger.cfg["window"] = 50
    try:
        assert [t.tag_ for t in trained(Doc(trained.vocab, words=words[:50]))] == whole_50
        docs = [Doc(trained.vocab, words=words), Doc(trained.vocab, words=words[:3]), Doc(trained.vocab, words=[])]
        tagged = list(trained.pipe(docs))
        assert [t.tag_ for t in tagged[0]] == parts[0] + parts[1] + parts[2]
        assert len(tagged[1]) == 3 and len(tagged[2]) == 0
    finally:
        tagger.cfg["window"] = 8192


def test_training_with_negative_labels():
    nlp = make_nlp()
    data = [("I like green eggs", {"tags": ["N", "V", "J", "N"]}), ("Eat blue ham", {"tags": ["V", "J", "N"]})]
    examples = make_examples(nlp, data)
    nlp.initialize(lambda: examples)
    vocab = nlp.vocab
    negative = Example(Doc(vocab, words=["eggs", "ham"]), Doc(vocab, words=["eggs", "ham"], tags=["!V", "!J"]))
    tagger = nlp.get_pipe("crf_tagger")
    scores = tagger.model.predict([negative.predicted])
    loss, d_scores = tagger.get_loss([negative], scores)
    assert loss > 0
    # ruling a tag out pushes its score down and no other's up more than it
    d_emissions = d_scores.scores.emissions
    assert d_emissions[0, 0, 2] > 0 and d_emissions[0, 1, 0] > 0
    optimizer = nlp.create_optimizer()
    for _ in range(30):
        nlp.update(examples + [negative], sgd=optimizer)
    doc = nlp("eggs ham")
    assert doc[0].tag_ != "V" and doc[1].tag_ != "J"


class _RunsCode:
    """Unpickling this calls open(path, "w"): it would create the file."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_model_file_with_code_is_refused_without_running_it(trained, tmp_path):
    tagger = trained.get_pipe("crf_tagger")
    before = tags_of(trained, TEST_TEXTS)
    marker = tmp_path / "code-ran"
    payload = io.BytesIO()
    torch.save({"emission.weight": _RunsCode(marker)}, payload)
    msg = srsly.msgpack_loads(tagger.model.to_bytes())
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim_msg = srsly.msgpack_loads(shim_bytes)
            # the format of spacy-crf 1.x (torch.save bytes): the one that can hold code
            node_shims[i] = srsly.msgpack_dumps({"config": shim_msg["config"], "state": payload.getvalue()})
    tagger.to_disk(tmp_path / "evil")
    (tmp_path / "evil" / "model").write_bytes(srsly.msgpack_dumps(msg))
    with pytest.raises(ValueError, match=r"\[E007\].*checksum"):  # not the weights saved with the cfg
        tagger.from_disk(tmp_path / "evil")
    cfg = srsly.read_json(tmp_path / "evil" / "cfg")
    # as a crafted file would come: its checksum recomputed
    srsly.write_json(tmp_path / "evil" / "cfg", with_checksum(cfg, (tmp_path / "evil" / "model").read_bytes()))
    with pytest.raises(ValueError, match=r"\[E017\]"):
        make_nlp().get_pipe("crf_tagger").from_disk(tmp_path / "evil")
    with pytest.raises(ValueError, match=r"\[E017\]"):
        tagger.from_disk(tmp_path / "evil")
    assert not marker.exists()
    assert tags_of(trained, TEST_TEXTS) == before
