"""Shared test helpers: tiny training data and pipelines, brute-force CRF
references, the shipped configs and running spaCy's CLI."""

import contextlib
import itertools
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy
import spacy
import torch
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.ml import torch_network
from spacy_crf.nn import CRFScores

TRAIN_DATA = [
    ("I like green eggs", {"tags": ["N", "V", "J", "N"]}),
    ("Eat blue ham", {"tags": ["V", "J", "N"]}),
    ("eggs", {"tags": ["N"]}),
]


UPOS_DATA = [
    ("I like green eggs", {"pos": ["PRON", "VERB", "ADJ", "NOUN"]}),
    ("Eat blue ham", {"pos": ["VERB", "ADJ", "NOUN"]}),
]


TEST_TEXTS = ["I like blue ham", "Eat green eggs", "eggs", "", "I like green eggs and ham"]


SMALL_MODEL = {
    "@architectures": "spacy_crf.BiLSTMCRF.v1",
    "hidden_width": 16,
    "depth": 1,
    "dropout": 0.0,
    "crf": True,
    "input_dropout": 0.0,
    "tok2vec": {
        "@architectures": "spacy.HashEmbedCNN.v2",
        "pretrained_vectors": None,
        "width": 32,
        "depth": 2,
        "embed_size": 500,
        "window_size": 1,
        "maxout_pieces": 3,
        "subword_features": True,
    },
}


# a small spacy_crf.HashCharEmbed.v2 with a known-word list
HASH_CHAR_EMBED = {
    "@architectures": "spacy_crf.HashCharEmbed.v2",
    "width": 16,
    "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
    "rows": [500, 100, 100, 50],
    "nM": 8,
    "nC": 4,
    "include_static_vectors": False,
    "min_count": 2,
    "word_dropout": 0.0,
}


def make_examples(nlp, data=TRAIN_DATA):
    return [Example.from_dict(nlp.make_doc(text), annots) for text, annots in data]


def make_nlp(model=None, factory="crf_tagger", **config):
    """A blank English pipeline with one component of the factory
    ("crf_tagger", "crf_morphologizer" or "crf_ner"), named as the factory,
    on the model (SMALL_MODEL by default) with the settings given."""
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, config={"model": model or SMALL_MODEL, **config})
    return nlp


def train(nlp, examples, steps=60):
    optimizer = nlp.initialize(get_examples=lambda: examples)
    losses = {}
    for _ in range(steps):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
    return losses


def trained_nlp():
    """The small tagger trained on TRAIN_DATA from seed 0 (for module-scoped
    fixtures, which run before the autouse `seeded` one)."""
    fix_random_seed(0)
    nlp = make_nlp()
    train(nlp, make_examples(nlp))
    return nlp


def model_weights(tagger):
    """Every parameter of the component: Thinc params and torch state."""
    weights = {}
    for node in tagger.model.walk():
        for name in node.param_names:
            if node.has_param(name):
                weights[f"{node.id}.{name}"] = node.ops.to_numpy(
                    node.get_param(name)
                ).copy()  # cupy on a GPU; a copy, not a view
    for key, value in torch_network(tagger.model).state_dict().items():
        weights[f"torch.{key}"] = value.cpu().numpy().copy()
    return list(weights.values())


def assert_same_weights(a, b):
    wa, wb = model_weights(a), model_weights(b)
    assert len(wa) == len(wb) > 0
    for x, y in zip(wa, wb):
        assert x.shape == y.shape
        assert numpy.array_equal(x, y)


def tags_of(nlp, texts, attr="tag_"):
    return [[getattr(t, attr) for t in nlp(text)] for text in texts]


def random_batch(seed, lengths, n_labels, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    B, T = len(lengths), max(max(lengths), 1)
    lengths_t = torch.tensor(lengths)
    return CRFScores(
        torch.randn(B, T, n_labels, generator=gen, dtype=dtype) * 2,
        torch.arange(T) < lengths_t[:, None],
        torch.randn(n_labels, n_labels, generator=gen, dtype=dtype),
        torch.randn(n_labels, generator=gen, dtype=dtype),
        torch.randn(n_labels, generator=gen, dtype=dtype),
    )


def brute_score(scores, b, path):
    """Score(x, y) written out term by term, for sequence b."""
    emissions, _, transitions, start, end = scores[:5]
    total = start[path[0]] + end[path[-1]]
    for t, label in enumerate(path):
        total = total + emissions[b, t, label]
    for prev, nxt in zip(path, path[1:]):
        total = total + transitions[prev, nxt]
    return float(total)


def all_paths(length, n_labels):
    return list(itertools.product(range(n_labels), repeat=length))


def brute_log_z(scores, b, length, allowed=None):
    K = scores.emissions.shape[2]
    values = [
        brute_score(scores, b, path)
        for path in all_paths(length, K)
        if allowed is None or all(allowed[b, t, y] for t, y in enumerate(path))
    ]
    return float(torch.logsumexp(torch.tensor(values, dtype=torch.float64), 0))


def valid_reference(tags, scheme):
    """A state machine written apart from the implementation."""
    two_sided = scheme in ("BILUO", "IOBES")
    last, unit = ("L", "U") if scheme == "BILUO" else ("E", "S")
    open_type = None  # type of an entity that has begun and not ended
    previous = "O"
    for tag in tags:
        prefix, _, kind = tag.partition("-")
        if prefix == "I" or (two_sided and prefix == last):
            if scheme in ("BIO", "IOB2"):
                if previous == "O" or previous.partition("-")[2] != kind:
                    return False
            elif open_type != kind:
                return False
        elif two_sided and open_type is not None:
            return False  # an entity left open
        if two_sided:
            open_type = kind if prefix in ("B", "I") else None
        previous = tag
    return not (two_sided and open_type is not None)


CONFIGS = Path(__file__).parent.parent / "configs"


SENTENCES = [
    (["I", "like", "green", "eggs", "."], ["PRP", "VBP", "JJ", "NNS", "."]),
    (["Eat", "blue", "ham", "!"], ["VB", "JJ", "NN", "."]),
    (["They", "eat", "ham", "."], ["PRP", "VBP", "NN", "."]),
    (["Green", "ham", "is", "blue", "."], ["JJ", "NN", "VBZ", "JJ", "."]),
]


def write_docbin(path):
    vocab = spacy.blank("en").vocab
    docs = [Doc(vocab, words=words, tags=tags) for words, tags in SENTENCES * 3]
    DocBin(docs=docs).to_disk(path)


def run_spacy(*args, cwd=None):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "spacy", *args], capture_output=True, text=True, env=env, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@contextlib.contextmanager
def no_host_sync():
    """Inside, a CUDA operation that makes the host wait for the device
    raises (torch's sync debug mode), and the mode is reset on the way out.
    torch warns that the mode is a prototype: that warning alone is ignored."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype feature")
        torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype feature")
            torch.cuda.set_sync_debug_mode("default")


# UPOS and UD features (crf_morphologizer, targets "morph" and "pos+morph"); "" is an annotated
# token with no features (spaCy's "_"), as for "."
MORPH_SENTENCES = [
    (
        ["I", "like", "green", "eggs", "."],
        ["PRON", "VERB", "ADJ", "NOUN", "PUNCT"],
        ["Case=Nom|Number=Sing|Person=1", "Tense=Pres|VerbForm=Fin", "Degree=Pos", "Number=Plur", ""],
    ),
    (
        ["Eat", "blue", "ham", "!"],
        ["VERB", "ADJ", "NOUN", "PUNCT"],
        ["Mood=Imp|VerbForm=Fin", "Degree=Pos", "Number=Sing", ""],
    ),
    (
        ["They", "ate", "ham", "."],
        ["PRON", "VERB", "NOUN", "PUNCT"],
        ["Case=Nom|Number=Plur|Person=3", "Tense=Past|VerbForm=Fin", "Number=Sing", ""],
    ),
]


def write_morph_docbin(path):
    vocab = spacy.blank("en").vocab
    docs = [Doc(vocab, words=words, pos=pos, morphs=morphs) for words, pos, morphs in MORPH_SENTENCES * 3]
    DocBin(docs=docs).to_disk(path)


def with_checksum(cfg, model_bytes):
    """A cfg with its checksum entry recomputed for the model bytes: a
    deliberate edit (the checksum guards against corruption, not edits)."""
    from spacy_crf.files import checksum

    cfg = {k: v for k, v in cfg.items() if k != "checksum"}
    return {**cfg, "checksum": checksum(cfg, model_bytes)}
