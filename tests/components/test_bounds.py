"""The components under "bounded, round 3": every size a caller or a file
controls is bounded before memory is spent (n-best k, threads, labels, the
window, the model files), and a method that fails leaves the component as it
was. The bounds are checked, never exhausted: nothing here allocates much."""

import os

import pytest
import spacy

from ..helpers import TEST_TEXTS, make_examples, make_nlp, tags_of, train, trained_nlp


@pytest.fixture(scope="module")
def trained():
    return trained_nlp()


def test_a_failed_add_label_leaves_the_component_as_it_was(tmp_path):
    nlp = trained_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    labels, tags = tagger.labels, tags_of(nlp, TEST_TEXTS)
    with pytest.raises(ValueError, match="E043"):
        tagger.add_label("\ud800")
    assert tagger.labels == labels
    assert tags_of(nlp, TEST_TEXTS) == tags
    nlp.to_disk(tmp_path / "nlp")
    assert tags_of(spacy.load(tmp_path / "nlp"), TEST_TEXTS) == tags


def test_a_failure_while_growing_the_network_is_rolled_back(monkeypatch):
    from spacy_crf.components import base

    nlp = trained_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    labels, tags = tagger.labels, tags_of(nlp, TEST_TEXTS)

    def fail_after_growing(model, *args, **kwargs):
        grow(model, *args, **kwargs)
        raise MemoryError("out of memory while growing")

    grow = base.add_labels
    monkeypatch.setattr(base, "add_labels", fail_after_growing)
    with pytest.raises(MemoryError):
        tagger.add_label("NEWTAG")
    monkeypatch.undo()
    assert tagger.labels == labels
    assert tags_of(nlp, TEST_TEXTS) == tags
    assert tagger.add_label("NEWTAG") == 1


@pytest.mark.parametrize("label", ["", "A\nB", "tab\there", "\x00"])
def test_empty_labels_and_control_characters_are_refused(label):
    nlp = make_nlp()
    with pytest.raises(ValueError, match="E043"):
        nlp.get_pipe("crf_tagger").add_label(label)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_nbest_refuses_a_k_that_is_not_a_count(trained, k):
    doc = trained.make_doc("I like eggs")
    with pytest.raises(ValueError, match="E044"):
        trained.get_pipe("crf_tagger").nbest([doc], k)


def test_nbest_refuses_a_k_over_its_bound_before_allocating(trained):
    doc = trained.make_doc("I like green eggs")
    with pytest.raises(ValueError, match=r"E044.*1,000.*SPACY_CRF_MAX_NBEST"):
        trained.get_pipe("crf_tagger").nbest([doc], 10**9)


def test_nbest_k_beyond_the_paths_that_exist_gives_them_all(trained, monkeypatch):
    tagger = trained.get_pipe("crf_tagger")
    doc = trained.make_doc("eggs ham")
    n_paths = len(tagger.tags) ** 2
    monkeypatch.setenv("SPACY_CRF_MAX_NBEST", str(10**7))
    ranked = tagger.nbest([doc], 10**7)[0]  # k clamped to the paths there are: no 10**7-wide lattice
    assert len(ranked) == n_paths
    assert ranked == tagger.nbest([doc], n_paths)[0]


@pytest.mark.parametrize("threads", [257, 5000])
def test_threads_over_the_bound_are_refused_when_the_component_is_built(threads):
    with pytest.raises(ValueError, match=r"E039.*threads.*256"):
        make_nlp(threads=threads)


def test_threads_over_the_bound_are_refused_when_set_later(trained, monkeypatch):
    from spacy_crf.threads import resolve_threads

    with pytest.raises(ValueError, match="256"):
        resolve_threads(5000)
    tagger = trained.get_pipe("crf_tagger")
    monkeypatch.setattr(tagger, "threads", 5000)
    with pytest.raises(ValueError, match=r"E039.*threads.*5000.*256"):
        trained("I like eggs")
    with pytest.raises(ValueError, match=r"E039.*threads"):
        tagger.update([])


@pytest.mark.parametrize("setting", ["window", "batch_words"])
def test_window_and_batch_words_are_bounded(setting):
    with pytest.raises(ValueError, match=f"E039.*{setting}"):
        make_nlp(**{setting: 2**40})


def test_labels_over_the_bound_are_refused_before_the_network_grows(monkeypatch):
    nlp = trained_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    labels = tagger.labels
    monkeypatch.setenv("SPACY_CRF_MAX_LABELS", str(len(labels) + 1))
    assert tagger.add_label("ONE_MORE") == 1
    with pytest.raises(ValueError, match=r"E045.*SPACY_CRF_MAX_LABELS"):
        tagger.add_label("TWO_MORE")
    assert tagger.labels == (*labels, "ONE_MORE")


def test_an_update_that_brings_labels_over_the_bound_is_refused(monkeypatch):
    from spacy.training import Example

    nlp = trained_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    tagger.learn_new_labels = True
    labels = tagger.labels
    monkeypatch.setenv("SPACY_CRF_MAX_LABELS", str(len(labels) + 2))
    words = ["a", "b", "c"]
    example = Example.from_dict(nlp.make_doc("a b c"), {"words": words, "tags": ["N1", "N2", "N3"]})
    with pytest.raises(ValueError, match="E045"):
        nlp.update([example])
    assert tagger.labels == labels


def test_initialize_with_labels_over_the_bound_is_refused(monkeypatch):
    nlp = make_nlp()
    monkeypatch.setenv("SPACY_CRF_MAX_LABELS", "2")
    examples = make_examples(nlp)
    with pytest.raises(ValueError, match="E045"):
        nlp.initialize(lambda: examples)


def test_an_invalid_bound_in_the_environment_is_a_coded_error(monkeypatch):
    monkeypatch.setenv("SPACY_CRF_MAX_LABELS", "many")
    from spacy_crf import bounds

    with pytest.raises(ValueError, match="E046.*SPACY_CRF_MAX_LABELS"):
        bounds.MAX_LABELS.value()


@pytest.fixture
def saved(tmp_path):
    nlp = trained_nlp()
    nlp.to_disk(tmp_path / "nlp")
    return tmp_path / "nlp"


@pytest.mark.parametrize("name", ["model", "cfg"])
def test_a_model_file_that_is_a_device_is_refused(saved, name):
    path = saved / "crf_tagger" / name
    path.unlink()
    path.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="E047.*not a regular file"):
        spacy.load(saved)


@pytest.mark.parametrize("name", ["model", "cfg"])
def test_a_model_file_that_is_a_fifo_is_refused_without_waiting(saved, name):
    path = saved / "crf_tagger" / name
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ValueError, match="E047.*not a regular file"):
        spacy.load(saved)


def test_a_model_file_over_its_bound_is_refused_before_it_is_read(saved, monkeypatch):
    path = saved / "crf_tagger" / "model"
    with path.open("r+b") as file:  # sparse: no disk spent
        file.truncate(1 << 40)
    with pytest.raises(ValueError, match=r"E047.*1,099,511,627,776 bytes.*SPACY_CRF_MAX_MODEL_BYTES"):
        spacy.load(saved)
    monkeypatch.setenv("SPACY_CRF_MAX_MODEL_BYTES", "100")
    path.write_bytes(b"x" * 101)
    with pytest.raises(ValueError, match="E047.*101 bytes"):
        spacy.load(saved)


def test_model_files_within_their_bounds_load(saved):
    tags = tags_of(spacy.load(saved), TEST_TEXTS)
    assert tags == tags_of(trained_nlp(), TEST_TEXTS)


def test_train_still_grows_within_the_bound():
    from spacy_crf import bounds

    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=2)
    assert len(nlp.get_pipe("crf_tagger").labels) <= bounds.MAX_LABELS.value()
