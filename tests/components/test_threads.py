"""The component's torch thread count: one thread by default, the process's
own choice kept, an explicit setting obeyed, and the previous count restored
after every call."""

import pytest
import spacy
import torch
from spacy.training import Example

from spacy_crf import CRFTagger
from spacy_crf.ml import torch_network
from spacy_crf.threads import (
    possible_defaults,
    resolve_threads,
    torch_default_threads,
    torch_threads,
)

TRAIN_DATA = [
    ("I like green eggs", {"tags": ["N", "V", "J", "N"]}),
    ("Eat blue ham", {"tags": ["V", "J", "N"]}),
]


@pytest.fixture
def untouched_process(monkeypatch):
    """A process that made no thread choice: no environment variable, torch
    at its default count (restored after the test)."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(torch_default_threads())
    yield
    torch.set_num_threads(before)


def test_auto_is_one_thread_in_an_untouched_process(untouched_process):
    assert resolve_threads(0) == 1


def test_auto_keeps_an_environment_variable(untouched_process, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert resolve_threads(0) is None
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    assert resolve_threads(0) is None


def test_auto_keeps_torch_set_num_threads(untouched_process):
    torch.set_num_threads(max(possible_defaults()) + 1)
    assert resolve_threads(0) is None


def test_a_count_torch_picks_itself_is_not_a_choice(untouched_process, monkeypatch):
    """Under a CPU affinity mask torch's default is the CPUs the process may
    use, not every core: that is still torch's own count."""
    for count in possible_defaults():
        torch.set_num_threads(count)
        assert resolve_threads(0) == 1


def test_explicit_count_wins(untouched_process, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert resolve_threads(3) == 3
    with pytest.raises(ValueError, match="threads must be 0"):
        resolve_threads(-1)


def test_scope_restores_the_previous_count(untouched_process):
    default = torch_default_threads()
    with torch_threads(0) as inside:
        assert inside == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == default
    with torch_threads(default + 1) as inside:
        assert torch.get_num_threads() == default + 1 == inside
    assert torch.get_num_threads() == default
    with pytest.raises(RuntimeError):
        with torch_threads(2):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == default


def _tagger_recording_threads(threads=None):
    nlp = spacy.blank("en")
    config = {} if threads is None else {"threads": threads}
    tagger = nlp.add_pipe("crf_tagger", config=config)
    examples = [Example.from_dict(nlp.make_doc(text), annots) for text, annots in TRAIN_DATA]
    optimizer = nlp.initialize(lambda: examples)
    seen = []
    torch_network(tagger.model).register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    return nlp, tagger, examples, optimizer, seen


def test_component_runs_on_one_thread_by_default_and_restores(untouched_process):
    nlp, tagger, examples, optimizer, seen = _tagger_recording_threads()
    default = torch_default_threads()
    nlp.update(examples, sgd=optimizer)
    list(nlp.pipe(["I like ham", "Eat eggs"]))
    nlp("blue ham")
    tagger.marginals([nlp.make_doc("green eggs")])
    tagger.nbest([nlp.make_doc("green eggs")], k=2)
    assert seen == [1] * 5
    assert torch.get_num_threads() == default


def test_component_threads_setting(untouched_process):
    nlp, tagger, examples, optimizer, seen = _tagger_recording_threads(threads=2)
    assert nlp.config["components"]["crf_tagger"]["threads"] == 2
    nlp.update(examples, sgd=optimizer)
    nlp("blue ham")
    tagger.threads = 3  # a runtime setting, not saved in the component's cfg
    nlp("blue ham")
    assert seen == [2, 2, 3]
    assert "threads" not in tagger.cfg


def test_component_keeps_the_process_choice(untouched_process):
    nlp, tagger, examples, optimizer, seen = _tagger_recording_threads()
    chosen = max(possible_defaults()) + 1
    torch.set_num_threads(chosen)
    nlp("blue ham")
    assert seen == [chosen]


def test_invalid_threads_is_a_coded_error():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[E039\]"):
        nlp.add_pipe("crf_tagger", config={"threads": -1})
    model = nlp.add_pipe("crf_tagger").model
    for threads in (1.5, True):
        with pytest.raises(ValueError, match=r"\[E039\]"):
            CRFTagger(nlp.vocab, model, threads=threads)


def test_finish_update_runs_on_the_components_threads(untouched_process, monkeypatch):
    """spacy train calls update(sgd=None) and then finish_update: both in scope."""
    nlp, tagger, examples, optimizer, _ = _tagger_recording_threads()
    seen = []
    shim = tagger.model.get_ref("output_layer").layers[0].shims[0]
    original = type(shim).finish_update
    monkeypatch.setattr(
        type(shim), "finish_update", lambda self, sgd: (seen.append(torch.get_num_threads()), original(self, sgd))
    )
    tagger.update(examples, sgd=None)  # accumulates gradients only
    tagger.finish_update(optimizer)
    assert seen == [1] and torch.get_num_threads() == torch_default_threads()


def test_numpy_blas_follows_the_scope(untouched_process):
    """numpy's BLAS pool spins like torch's: the scope sets it too, and restores it."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return sorted({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"})

    before = blas_threads()
    if not before:
        pytest.skip("no BLAS library loaded")
    with torch_threads(0):
        assert blas_threads() == [1]
    with torch_threads(3):
        assert blas_threads() == [3]
    assert blas_threads() == before


def test_concurrent_calls_leave_every_count_as_it_was(untouched_process):
    """Threads entering and leaving the scope in every order, with different
    settings: each runs with its own count inside, and afterwards the
    calling threads, a thread started later and numpy's BLAS have the counts
    from before (the old scope let one thread restore another's count)."""
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return sorted({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"})

    default, blas_before = torch.get_num_threads(), blas_threads()
    barrier, seen, errors = threading.Barrier(8), [], []

    def call(setting, rounds=20):
        try:
            for i in range(rounds):
                if i == 0:
                    barrier.wait()
                with torch_threads(setting) as inside:
                    seen.append((setting, inside, torch.get_num_threads()))
                    torch.ones(64, 64) @ torch.ones(64, 64)
            seen.append(("after", setting, torch.get_num_threads()))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=call, args=(setting,)) for setting in (0, 2, 3, 0, 2, 3, 0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    expected = {0: 1, 1: 1, 2: 2, 3: 3}
    assert all(inside == now == expected[setting] for setting, inside, now in seen if setting != "after")
    assert all(now == default for kind, _, now in seen if kind == "after")
    later = []
    thread = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert torch.get_num_threads() == default and later == [default]
    assert blas_threads() == blas_before
