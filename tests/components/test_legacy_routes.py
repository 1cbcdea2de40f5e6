"""crf_tagger's 0.x targets ("morph", "pos+morph", "tag+pos+morph", "ents")
build the component that has them now (W003), and it scores, evaluates and
trains like one built by its own factory (1.0 kept crf_tagger's scorer, and
nlp.evaluate raised KeyError)."""

import warnings

import pytest
import spacy
from spacy.cli.train import train as spacy_train
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from ..helpers import MORPH_SENTENCES, SMALL_MODEL

ENT_SENTENCES = [
    (["Bob", "likes", "Paris", "."], ["B-PER", "O", "B-LOC", "O"]),
    (["Anna", "met", "Bob", "in", "Rome", "."], ["B-PER", "O", "B-PER", "O", "B-LOC", "O"]),
]
TARGETS = ["morph", "pos+morph", "tag+pos+morph", "ents"]
SCORES = {"ents": "ents_f", "morph": "morph_acc", "pos+morph": "pos_acc", "tag+pos+morph": "tag_pos_morph_acc"}


def gold_docs(vocab, target):
    if target == "ents":
        return [Doc(vocab, words=words, ents=ents) for words, ents in ENT_SENTENCES * 3]
    tags = ["X"] * 6
    return [
        Doc(vocab, words=words, pos=pos, morphs=morphs, tags=tags[: len(words)])
        for words, pos, morphs in MORPH_SENTENCES * 3
    ]


def moved_nlp(target):
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="W003"):
        nlp.add_pipe("crf_tagger", config={"target": target, "model": SMALL_MODEL})
    return nlp


@pytest.mark.parametrize("target", TARGETS)
def test_a_moved_target_evaluates(target):
    nlp = moved_nlp(target)
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in gold_docs(nlp.vocab, target)]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    scores = nlp.evaluate(examples)
    assert SCORES[target] in scores and 0.0 <= scores[SCORES[target]] <= 1.0


@pytest.mark.parametrize("target", TARGETS)
def test_a_moved_target_trains_with_spacy_train(target, tmp_path):
    nlp = moved_nlp(target)
    DocBin(docs=gold_docs(nlp.vocab, target)).to_disk(tmp_path / "data.spacy")
    config = nlp.config.copy()
    config["paths"]["train"] = config["paths"]["dev"] = str(tmp_path / "data.spacy")
    config["training"]["max_steps"] = 4
    config["training"]["eval_frequency"] = 2
    config["training"]["score_weights"] = {SCORES[target]: 1.0}
    config.to_disk(tmp_path / "config.cfg")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*W003")
        spacy_train(tmp_path / "config.cfg", tmp_path / "out")
        trained = spacy.load(tmp_path / "out" / "model-last")
    assert type(trained.get_pipe("crf_tagger")).__name__ in ("CRFMorphologizer", "CRFEntityRecognizer")
