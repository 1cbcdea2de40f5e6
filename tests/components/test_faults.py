"""The component under faults a server or a fine-tuning run meets: predict
never switches the shared network between train() and eval(), non-finite
weights and scores are coded errors, saved files are checked and written
atomically, and fine-tuning learns. Each test fails on spacy-crf 0.3.0."""

import json

import numpy
import pytest
import torch

from spacy_crf.ml import torch_network

from ..helpers import make_examples, make_nlp, train, with_checksum

DROPOUT_MODEL_SETTINGS = {"dropout": 0.5, "input_dropout": 0.5}


@pytest.fixture
def dropout_nlp():
    """A small tagger trained with heavy dropout, so that a prediction that
    ran with dropout on would show."""
    from ..helpers import SMALL_MODEL

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


# Finite or a coded error


@pytest.fixture
def trained_nlp_on_disk(tmp_path):
    from ..helpers import trained_nlp

    nlp = trained_nlp()
    nlp.to_disk(tmp_path / "nlp")
    return nlp, tmp_path / "nlp"


def _poison(nlp, where):
    """Put NaN in the torch network's transitions, or inf in the whole first Thinc parameter."""
    tagger = nlp.get_pipe("crf_tagger")
    if where == "torch":
        with torch.no_grad():
            torch_network(tagger.model).transitions[0, 0] = float("nan")
        return
    node = next(node for node in tagger.model.walk() if node.param_names and node.has_param(node.param_names[0]))
    node.get_param(node.param_names[0])[...] = numpy.inf


@pytest.mark.parametrize("where", ["torch", "thinc"])
def test_non_finite_weights_are_refused_at_load(trained_nlp_on_disk, tmp_path, where):
    """0.3.0 loaded them and labelled every token with label 0."""
    import spacy

    nlp, _ = trained_nlp_on_disk
    _poison(nlp, where)
    nlp.to_disk(tmp_path / "poisoned")
    with pytest.raises(ValueError, match=r"\[E033\]"):
        spacy.load(tmp_path / "poisoned")
    fresh = spacy.load(tmp_path / "nlp")
    before = [t.tag_ for t in fresh("I like green eggs")]
    with pytest.raises(ValueError, match=r"\[E033\]"):
        fresh.get_pipe("crf_tagger").from_disk(tmp_path / "poisoned" / "crf_tagger")
    assert [t.tag_ for t in fresh("I like green eggs")] == before  # left unchanged


@pytest.mark.parametrize("where", ["torch", "thinc"])
def test_non_finite_scores_raise_instead_of_writing_labels(trained_nlp_on_disk, where):
    nlp, _ = trained_nlp_on_disk
    _poison(nlp, where)
    doc = nlp.make_doc("I like green eggs")
    with pytest.raises(ValueError, match=r"\[E034\]"):
        nlp.get_pipe("crf_tagger")(doc)
    assert all(token.tag_ == "" for token in doc)
    with pytest.raises(ValueError, match=r"\[E034\]"):
        list(nlp.pipe(["I like ham", "eggs"]))


# Integrity of saved files


def test_every_bit_flip_in_the_weights_is_detected(trained_nlp_on_disk):
    """0.3.0 loaded 5 of 5 flipped files silently, and a flip near the end
    of the file read as a config mismatch (E008)."""
    nlp, path = trained_nlp_on_disk
    model_file = path / "crf_tagger" / "model"
    data = model_file.read_bytes()
    rng = numpy.random.default_rng(0)
    positions = sorted({0, 1, len(data) - 1, len(data) - 2, *rng.integers(0, len(data), 40).tolist()})
    tagger = nlp.get_pipe("crf_tagger")
    before = [t.tag_ for t in nlp("I like green eggs")]
    for position in positions:
        flipped = bytearray(data)
        flipped[position] ^= 1 << int(rng.integers(0, 8))
        model_file.write_bytes(bytes(flipped))
        with pytest.raises(ValueError, match=r"\[E007\]"):
            tagger.from_disk(path / "crf_tagger", exclude=["vocab"])
    assert [t.tag_ for t in nlp("I like green eggs")] == before
    model_file.write_bytes(data)
    tagger.from_disk(path / "crf_tagger", exclude=["vocab"])


def test_the_bit_flips_benchmark_counts_every_refused_load(trained_nlp_on_disk, tmp_path):
    from benchmarks.bit_flips import flip_and_load

    _, path = trained_nlp_on_disk
    result = flip_and_load(path, tmp_path / "work", flips=10)
    assert result["flips"] == 10 + 64 * 8 and result["refused"] == result["flips"]
    assert result["codes"] == {"E007": result["flips"]}


def test_the_checksum_covers_to_bytes_too(trained_nlp_on_disk):
    import srsly

    nlp, _ = trained_nlp_on_disk
    tagger = nlp.get_pipe("crf_tagger")
    msg = srsly.msgpack_loads(tagger.to_bytes())
    msg["model"] = msg["model"][:-1] + bytes([msg["model"][-1] ^ 4])
    with pytest.raises(ValueError, match=r"\[E007\]"):
        tagger.from_bytes(srsly.msgpack_dumps(msg))


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda cfg: {**cfg, "labels": cfg["labels"] + cfg["labels"][:1]}, "more than once"),
        (lambda cfg: {**cfg, "labels": cfg["labels"][:-1] + [7]}, "list of strings"),
        (lambda cfg: {**cfg, "target": "pos"}, "cannot write the label"),
        (lambda cfg: {**cfg, "target": "upos"}, "unknown target"),
    ],
)
def test_an_invalid_saved_cfg_is_a_coded_error(trained_nlp_on_disk, edit, match):
    """0.3.0 loaded a duplicated label, failed at predict with spaCy's E017
    for an integer label, and with a KeyError shown as spaCy's E109 for
    target "pos" over XPOS labels."""
    import srsly

    nlp, path = trained_nlp_on_disk
    cfg = srsly.read_json(path / "crf_tagger" / "cfg")
    with pytest.raises(ValueError, match=r"\[E007\].*checksum"):  # edited: not what was saved
        srsly.write_json(path / "crf_tagger" / "cfg", edit(cfg))
        nlp.get_pipe("crf_tagger").from_disk(path / "crf_tagger", exclude=["vocab"])
    edited = edit(cfg)  # edited on purpose, the checksum recomputed
    srsly.write_json(path / "crf_tagger" / "cfg", with_checksum(edited, (path / "crf_tagger" / "model").read_bytes()))
    with pytest.raises(ValueError, match=rf"\[E035\].*{match}"):
        nlp.get_pipe("crf_tagger").from_disk(path / "crf_tagger", exclude=["vocab"])
    assert [t.tag_ for t in nlp("I like green eggs")] == ["N", "V", "J", "N"]


_SAVE_FOREVER = """
import sys, spacy
first, second, target = spacy.load(sys.argv[1]), spacy.load(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
while True:
    for nlp in (first, second):
        nlp.get_pipe("crf_tagger").to_disk(target, exclude=["vocab"])
"""


def test_a_kill_while_saving_leaves_a_component_that_loads(tmp_path):
    """kill -9 of a process that keeps saving the component: each of its
    files is the old one or the new one, never a part (0.3.0 wrote in
    place, and a killed `spacy train` left a truncated model-last), and the
    component loads, with the weights of one save (1.0 could leave the cfg of
    one save beside the weights of another: E007)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from ..helpers import make_examples as examples_of
    from ..helpers import trained_nlp

    versions = []
    for steps in (1, 2):
        nlp = make_nlp()
        train(nlp, examples_of(nlp), steps=steps)
        nlp.to_disk(tmp_path / f"v{steps}")
        versions.append(tmp_path / f"v{steps}")
    whole = {name: {(v / "crf_tagger" / name).read_bytes() for v in versions} for name in ("cfg", "model")}
    target = tmp_path / "target"
    trained_nlp().get_pipe("crf_tagger").to_disk(target)
    whole = {name: whole[name] | {(target / name).read_bytes()} for name in whole}
    rng = numpy.random.default_rng(0)
    for _ in range(4):
        with subprocess.Popen(
            [sys.executable, "-c", _SAVE_FOREVER, str(versions[0]), str(versions[1]), str(target)],
            stdout=subprocess.PIPE,
            text=True,
        ) as process:
            assert process.stdout.readline().strip() == "ready"
            time.sleep(float(rng.uniform(0.05, 0.5)))
            os.kill(process.pid, signal.SIGKILL)
        for name in ("cfg", "model"):
            assert (target / name).read_bytes() in whole[name]
        loaded = make_nlp().get_pipe("crf_tagger").from_disk(target, exclude=["vocab"])
        assert loaded.labels


@pytest.mark.parametrize("killed_before", ["cfg.next", "model", "rename"])
def test_a_save_cut_at_any_step_loads_the_old_or_the_new_component(tmp_path, monkeypatch, killed_before):
    """A save stopped before each of its steps (writing cfg.next, the
    weights, the rename to cfg) leaves files that load: the old component
    before the weights are in place, the new one after."""
    from spacy_crf.components import saving

    from ..helpers import make_examples as examples_of

    old, new = make_nlp(), make_nlp()
    train(old, examples_of(old), steps=1)
    train(new, examples_of(new), steps=3)
    target = tmp_path / "component"
    old.get_pipe("crf_tagger").to_disk(target)

    class Killed(BaseException):
        pass

    def write_atomic(path, data):
        if path.name == killed_before:
            raise Killed
        saving.write_atomic.__wrapped__(path, data)

    def commit_pending_cfg(path):
        if killed_before == "rename":
            raise Killed
        real_commit(path)

    real_commit = saving.commit_pending_cfg
    write_atomic.__wrapped__ = saving.write_atomic
    monkeypatch.setattr(saving, "write_atomic", write_atomic)
    monkeypatch.setattr(saving, "commit_pending_cfg", commit_pending_cfg)
    with pytest.raises(Killed):
        new.get_pipe("crf_tagger").to_disk(target)
    monkeypatch.undo()
    loaded = make_nlp().get_pipe("crf_tagger").from_disk(target, exclude=["vocab"])
    expected = new if killed_before == "rename" else old
    texts = ["I like green eggs", "Eat blue ham"]
    docs = [expected.make_doc(t) for t in texts]
    got = loaded.marginals(docs)
    want = expected.get_pipe("crf_tagger").marginals(docs)
    for a, b in zip(got, want):
        numpy.testing.assert_array_equal(a, b)


# Fine-tuning


def _weights_vector(nlp):
    from ..helpers import model_weights

    return numpy.concatenate([w.ravel() for w in model_weights(nlp.get_pipe("crf_tagger"))])


def test_the_schedule_is_thincs_but_at_step_0():
    from itertools import islice

    from thinc.schedules import warmup_linear as thinc_warmup_linear

    from spacy_crf.schedules import warmup_linear

    ours = list(islice(warmup_linear(0.002, 10, 50, resume_rate=0.0002), 60))
    thincs = list(islice(thinc_warmup_linear(0.002, 10, 50), 60))
    assert ours[0] == 0.0002 and thincs[0] == 0.0
    assert ours[1:] == thincs[1:]


SHIPPED_CONFIGS = sorted(__import__("pathlib").Path(__file__).parents[2].glob("configs/*.cfg"))


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=lambda p: p.name)
def test_the_optimizer_resume_training_builds_from_a_shipped_config_learns(path):
    """With warmup_linear.v1 (0.3.0's configs) its rate was 0: nlp.update
    does not step schedules, so fine-tuning changed no weight."""
    from spacy.util import load_config, registry

    config = load_config(path, interpolate=False)
    optimizer = registry.resolve({"optimizer": config["training"]["optimizer"]})["optimizer"]
    assert optimizer.learn_rate > 0


def test_resume_training_and_update_learn_with_cpu_cfg(tmp_path):
    """spacy.load of a pipeline trained with configs/cpu.cfg, then
    nlp.resume_training() and nlp.update(): the weights change and the loss falls."""
    import spacy
    from spacy.training import Example
    from spacy.util import load_config, load_model_from_config

    from ..helpers import TRAIN_DATA

    config = load_config(
        __import__("pathlib").Path(__file__).parents[2] / "configs" / "cpu.cfg",
        overrides={"components.crf_tagger.model.tok2vec.min_count": 1},
    )
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    examples = [Example.from_dict(nlp.make_doc(text), annots) for text, annots in TRAIN_DATA]
    nlp.initialize(lambda: examples)
    nlp.to_disk(tmp_path / "nlp")
    nlp = spacy.load(tmp_path / "nlp")
    optimizer = nlp.resume_training()
    assert optimizer.learn_rate == config["training"]["optimizer"]["learn_rate"]["resume_rate"]
    before = _weights_vector(nlp)
    new = [Example.from_dict(nlp.make_doc(text), {"tags": ["V", "N"]}) for text in ("Eat eggs", "Like ham")]
    trajectory = []
    for _ in range(15):
        losses = {}
        nlp.update(new, sgd=optimizer, losses=losses)
        trajectory.append(losses["crf_tagger"])
    assert not numpy.array_equal(before, _weights_vector(nlp))
    assert trajectory[-1] < 0.75 * trajectory[0]


def test_rehearse_steps_towards_the_pipelines_earlier_labels():
    """0.3.0 inherited TrainablePipe.rehearse: losses {} and no weight changed."""
    from spacy.training import Example

    from ..helpers import TEST_TEXTS, trained_nlp

    nlp = trained_nlp()
    texts = [text for text in TEST_TEXTS if text]
    raw = [Example(nlp.make_doc(text), nlp.make_doc(text)) for text in texts]
    with pytest.raises(ValueError, match=r"\[E036\]"):
        nlp.rehearse(raw)
    before_tags = [[t.tag_ for t in nlp(text)] for text in texts]
    optimizer = nlp.resume_training()
    before = _weights_vector(nlp)
    losses = nlp.rehearse(raw, sgd=optimizer)
    assert losses["crf_tagger"] > 0
    assert not numpy.array_equal(before, _weights_vector(nlp))
    # fine-tuning on new labels while rehearsing keeps the old labels elsewhere
    new = [Example.from_dict(nlp.make_doc("ham"), {"tags": ["V"]})]
    for _ in range(10):
        nlp.update(new, sgd=optimizer)
        nlp.rehearse(raw, sgd=optimizer)
    assert [[t.tag_ for t in nlp(text)] for text in texts] == before_tags


def test_every_bit_flip_of_the_checksum_key_is_refused(tmp_path):
    """With the key's name damaged, the checksum is missing: a cfg saved by
    1.0 or later without one is refused (E007), never loaded unchecked."""
    from ..helpers import make_examples as examples_of

    nlp = make_nlp()
    train(nlp, examples_of(nlp), steps=1)
    nlp.get_pipe("crf_tagger").to_disk(tmp_path / "saved")
    data = (tmp_path / "saved" / "cfg").read_bytes()
    at = data.index(b'"checksum"') + 1
    target = tmp_path / "flipped"
    target.mkdir()
    (target / "model").write_bytes((tmp_path / "saved" / "model").read_bytes())
    loaded = 0
    for i in range(at, at + len(b"checksum")):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[i] ^= 1 << bit
            (target / "cfg").write_bytes(bytes(flipped))
            try:
                make_nlp().get_pipe("crf_tagger").from_disk(target, exclude=["vocab"])
                loaded += 1
            except ValueError as e:
                assert "[E007]" in str(e) or "[E035]" in str(e)
    assert loaded == 0
    cfg = json.loads(data)
    del cfg["checksum"]
    (target / "cfg").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"\[E007\].*no \"checksum\" entry"):
        make_nlp().get_pipe("crf_tagger").from_disk(target, exclude=["vocab"])


def test_a_repeated_label_among_many_is_found(tmp_path):
    from ..helpers import make_examples as examples_of

    nlp = make_nlp()
    train(nlp, examples_of(nlp), steps=1)
    tagger = nlp.get_pipe("crf_tagger")
    tagger.to_disk(tmp_path)
    cfg = json.loads((tmp_path / "cfg").read_text())
    labels = [f"L{i}" for i in range(40_000)] + ["L7"]
    cfg = with_checksum({**cfg, "labels": labels}, (tmp_path / "model").read_bytes())
    (tmp_path / "cfg").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"\[E035\].*'L7' is listed more than once"):
        tagger.from_disk(tmp_path, exclude=["vocab"])
