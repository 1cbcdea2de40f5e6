"""configs/transformer.cfg, transformer_case.cfg (crf_tagger) and
ner_transformer.cfg (crf_ner) train with `spacy train`
on a tiny, randomly initialised BERT saved to a temporary folder (never the
Hugging Face hub)."""

import json

import pytest
import spacy

from ..helpers import CONFIGS, SENTENCES, run_spacy, write_docbin

transformers = pytest.importorskip("transformers")
pytest.importorskip("spacy_transformers")


def save_tiny_bert(path):
    """A 1-layer BERT of width 32 and a word-level vocabulary of the test words."""
    from scripts.tiny_encoder import save_tiny_bert as save

    save(path, [w for ws, _ in SENTENCES for w in ws] + ["ham", "like"])


def train_with_tiny_bert(config, tmp_path, monkeypatch):
    """`spacy train` of configs/<config> on tmp_path/train.spacy for 60 steps
    with a tiny BERT, into tmp_path/out; offline."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    save_tiny_bert(tmp_path / "tiny-bert")
    run_spacy(
        "train",
        str(CONFIGS / config),
        "--output",
        str(tmp_path / "out"),
        "--paths.train",
        str(tmp_path / "train.spacy"),
        "--paths.dev",
        str(tmp_path / "train.spacy"),
        "--paths.transformer",
        str(tmp_path / "tiny-bert"),
        "--training.max_steps",
        "60",
        "--training.eval_frequency",
        "20",
        "--training.optimizer.learn_rate.initial_rate",
        "0.003",
        "--training.optimizer.learn_rate.warmup_steps",
        "5",
    )


@pytest.mark.slow
@pytest.mark.parametrize("config", ["transformer.cfg", "transformer_case.cfg"])
def test_transformer_config_trains_and_tags(config, tmp_path, monkeypatch):
    write_docbin(tmp_path / "train.spacy")
    train_with_tiny_bert(config, tmp_path, monkeypatch)
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert nlp.pipe_names == ["transformer", "crf_tagger"]
    # transformer_case: the byte table beside the listener, trained and loaded
    chars = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "charembed"]
    assert len(chars) == (config == "transformer_case.cfg")
    assert all(n.get_param("E").any() for n in chars)
    assert set(nlp.get_pipe("crf_tagger").labels) == {t for _, ts in SENTENCES for t in ts}
    # the listener passed gradients back: the pipeline fits its training data
    run_spacy(
        "evaluate",
        str(tmp_path / "out" / "model-last"),
        str(tmp_path / "train.spacy"),
        "--output",
        str(tmp_path / "scores.json"),
    )
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["tag_acc"] >= 0.9, scores
    words, tags = SENTENCES[0]
    doc = nlp(spacy.tokens.Doc(nlp.vocab, words=words))
    assert [t.tag_ for t in doc] == tags


@pytest.mark.slow
def test_ner_transformer_config_trains_and_writes_entities(tmp_path, monkeypatch):
    vocab = spacy.blank("en").vocab
    docs = []
    for words, _ in SENTENCES * 3:
        doc = spacy.tokens.Doc(vocab, words=words)
        # the first capitalised word is an entity
        doc.ents = [doc.char_span(doc[i].idx, doc[i].idx + len(doc[i]), label="X") for i in range(1) if doc[i].is_title]
        docs.append(doc)
    spacy.tokens.DocBin(docs=docs).to_disk(tmp_path / "train.spacy")
    train_with_tiny_bert("ner_transformer.cfg", tmp_path, monkeypatch)
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert nlp.pipe_names == ["transformer", "crf_ner"]
    assert nlp.get_pipe("crf_ner").tags == ("B-X", "I-X", "L-X", "O", "U-X")
    run_spacy(
        "evaluate",
        str(tmp_path / "out" / "model-last"),
        str(tmp_path / "train.spacy"),
        "--output",
        str(tmp_path / "scores.json"),
    )
    assert json.loads((tmp_path / "scores.json").read_text())["ents_f"] >= 0.9


def test_update_under_a_transformer_keeps_the_process_threads(tmp_path, monkeypatch):
    """With threads = 0 (auto) crf_tagger's update runs the transformer's
    backward (through the listener) on the process's threads, not one; a
    crf_tagger without a transformer keeps auto's count."""
    import torch
    from spacy.tokens import Doc
    from spacy.training import Example

    from spacy_crf.components.training import TrainingMixin, listens_to_a_transformer
    from spacy_crf.threads import resolve_threads

    from ..helpers import make_nlp

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    save_tiny_bert(tmp_path / "bert")
    config = spacy.util.load_config(
        CONFIGS / "trf_tagger.cfg", overrides={"paths.transformer": str(tmp_path / "bert")}, interpolate=False
    )
    with_transformer = spacy.util.load_model_from_config(config, auto_fill=True)
    without = make_nlp()
    seen = {}
    step = TrainingMixin._step

    def recording_step(self, *args, **kwargs):
        seen[self.name, listens_to_a_transformer(self.model)] = torch.get_num_threads()
        return step(self, *args, **kwargs)

    monkeypatch.setattr(TrainingMixin, "_step", recording_step)
    # a process that chose no count (the tests set OMP_NUM_THREADS): auto alone takes one thread
    monkeypatch.setattr("spacy_crf.threads.user_chose_threads", lambda count: False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    process = torch.get_num_threads()
    for nlp in (with_transformer, without):
        examples = [
            Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, tags=tags)) for words, tags in SENTENCES
        ]
        nlp.initialize(lambda examples=examples: examples)
        nlp.update(examples)
    after = torch.get_num_threads()
    torch.set_num_threads(before)
    assert seen[("crf_tagger", True)] == process
    assert seen[("crf_tagger", False)] == resolve_threads(0, process) == 1
    assert after == process
