"""Labels added to a trained component (add_label, learn_new_labels): no
prediction changes until the label is trained, then it is learned in a few
hundred updates while the old labels keep their score. spaCy's own tagger,
morphologizer and ner cannot add a label after training."""

import random

import pytest
import torch
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.ml import torch_network
from spacy_crf.nn import BiLSTMCRF, viterbi_decode
from spacy_crf.nn.growth import grown_network

from ..helpers import make_nlp

DET, ADJ, NOUN, VERB = (
    ["the", "a", "this", "that"],
    ["red", "big", "old", "small", "green"],
    ["cat", "dog", "house", "tree", "car", "bird"],
    ["sees", "likes", "finds", "takes"],
)
NUM = ["two", "three", "five", "seven", "nine"]
PERSON, CITY = ["Alice", "Bob", "Carol", "Dave", "Erin"], ["Paris", "Rome", "Oslo", "Lima", "Cairo"]

TAGS = {
    "the": "DT",
    "a": "DT",
    "this": "DT",
    "that": "DT",
    **{w: "JJ" for w in ADJ},
    **{w: "NN" for w in NOUN},
    **{w: "VBZ" for w in VERB},
    **{w: "CD" for w in NUM},
    **{w: "NNP" for w in PERSON + CITY},
}
MORPH = {
    "DT": ("DET", "PronType=Art"),
    "JJ": ("ADJ", "Degree=Pos"),
    "NN": ("NOUN", "Number=Sing"),
    "VBZ": ("VERB", "Number=Sing|Tense=Pres"),
    "CD": ("NUM", "NumType=Card"),
    "NNP": ("PROPN", "Number=Sing"),
}


def phrase(rng, new):
    words = [rng.choice(DET)]
    if new and rng.random() < 0.7:
        words.append(rng.choice(NUM))
    if rng.random() < 0.5:
        words.append(rng.choice(ADJ))
    return words + [rng.choice(NOUN)]


def tagged_sentences(n, seed, new):
    """Sentences of DT (CD) (JJ) NN VBZ DT (CD) (JJ) NN; with `new`, the
    number words (tag CD, a new label) in most of them."""
    rng = random.Random(seed)
    return [phrase(rng, new) + [rng.choice(VERB)] + phrase(rng, new) for _ in range(n)]


def entity_sentences(n, seed, new):
    """PERSON sees PERSON; with `new`, PERSON visits CITY (a new type)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        other, label = (rng.choice(CITY), "CITY") if new and rng.random() < 0.6 else (rng.choice(PERSON), "PERSON")
        words = [rng.choice(PERSON), rng.choice(VERB), "the", rng.choice(NOUN), "near", other]
        out.append((words, [(0, 1, "PERSON"), (5, 6, label)]))
    return out


def examples(nlp, factory, n, seed, new):
    out = []
    if factory == "crf_ner":
        for words, ents in entity_sentences(n, seed, new):
            doc = Doc(nlp.vocab, words=words)
            spans = [(doc[s].idx, doc[e - 1].idx + len(doc[e - 1]), label) for s, e, label in ents]
            out.append(Example.from_dict(Doc(nlp.vocab, words=words), {"entities": spans}))
        return out
    for words in tagged_sentences(n, seed, new):
        tags = [TAGS[w] for w in words]
        if factory == "crf_tagger":
            annots = {"tags": tags}
        else:
            annots = {"pos": [MORPH[t][0] for t in tags], "morphs": [MORPH[t][1] for t in tags]}
        out.append(Example.from_dict(Doc(nlp.vocab, words=words), annots))
    return out


MODELS = {
    "crf_tagger": {"transitions": "full", "emissions": "full"},
    "crf_morphologizer": {"transitions": "factored", "emissions": "composed"},
    "crf_ner": {"transitions": "full", "emissions": "full"},
}


def small_model(transitions, emissions):
    return {
        "@architectures": "spacy_crf.BiLSTMCRF.v4",
        "hidden_width": 24,
        "depth": 1,
        "dropout": 0.0,
        "input_dropout": 0.0,
        "crf": True,
        "chunk_size": 0,
        "transitions": transitions,
        "emissions": emissions,
        "tok2vec": {
            "@architectures": "spacy.HashEmbedCNN.v2",
            "pretrained_vectors": None,
            "width": 32,
            "depth": 1,
            "embed_size": 300,
            "window_size": 1,
            "maxout_pieces": 2,
            "subword_features": True,
        },
    }


def values(nlp, factory, docs):
    """Per token, what the component wrote (ner: the IOB tag and type)."""
    if factory == "crf_tagger":
        return [[t.tag_ for t in doc] for doc in docs]
    if factory == "crf_morphologizer":
        return [[f"{t.pos_} {t.morph}" for t in doc] for doc in docs]
    return [[f"{t.ent_iob_}-{t.ent_type_}" for t in doc] for doc in docs]


def accuracy(nlp, factory, egs):
    predicted = values(nlp, factory, nlp.pipe(Doc(nlp.vocab, words=[t.text for t in eg.reference]) for eg in egs))
    gold = values(nlp, factory, [eg.reference for eg in egs])
    pairs = [(p, g) for doc_p, doc_g in zip(predicted, gold) for p, g in zip(doc_p, doc_g)]
    return 100.0 * sum(p == g for p, g in pairs) / len(pairs), pairs


NEW_VALUE = {"crf_tagger": "CD", "crf_morphologizer": "NUM NumType=Card", "crf_ner": "B-CITY"}
NEW_LABEL = {"crf_tagger": "CD", "crf_morphologizer": "NumType=Card|POS=NUM", "crf_ner": "CITY"}


@pytest.mark.parametrize("factory", list(MODELS))
@pytest.mark.parametrize("how", ["add_label", "learn_new_labels"])
def test_a_trained_component_learns_a_new_label_and_keeps_the_old(factory, how):
    fix_random_seed(0)
    nlp = make_nlp(small_model(**MODELS[factory]), factory=factory, learn_new_labels=how == "learn_new_labels")
    component = nlp.get_pipe(factory)
    old_train = examples(nlp, factory, 80, 1, new=False)
    old_dev = examples(nlp, factory, 40, 2, new=False)
    new_train = examples(nlp, factory, 80, 3, new=True)
    new_dev = examples(nlp, factory, 40, 4, new=True)
    optimizer = nlp.initialize(get_examples=lambda: old_train)
    for step in range(30):
        nlp.update(old_train[(step * 16) % 80 :][:16], sgd=optimizer)
    before, _ = accuracy(nlp, factory, old_dev)
    docs = [Doc(nlp.vocab, words=[t.text for t in eg.reference]) for eg in old_dev + new_dev]
    predicted = values(nlp, factory, nlp.pipe(d.copy() for d in docs))
    n_labels = len(component.tags)
    if how == "add_label":
        assert component.add_label(NEW_LABEL[factory]) == 1
        assert component.add_label(NEW_LABEL[factory]) == 0
        assert len(component.tags) > n_labels
        # nothing it predicts changes before the label is trained
        assert values(nlp, factory, nlp.pipe(d.copy() for d in docs)) == predicted
    else:
        with pytest.raises(ValueError, match=r"\[E003\]"):
            component.learn_new_labels = False
            nlp.update(new_train[:8])
        component.learn_new_labels = True
    optimizer = nlp.resume_training()
    mixed = old_train + new_train
    random.Random(0).shuffle(mixed)
    for step in range(120):
        nlp.update(mixed[(step * 16) % 160 :][:16], sgd=optimizer)
    after, _ = accuracy(nlp, factory, old_dev)
    _, pairs = accuracy(nlp, factory, new_dev)
    new = [p == g for p, g in pairs if g == NEW_VALUE[factory]]
    assert NEW_LABEL[factory] in component.labels
    texts = [d.copy() for d in docs]
    loaded = make_nlp(small_model(**MODELS[factory]), factory=factory).from_bytes(nlp.to_bytes())
    assert values(loaded, factory, loaded.pipe(d.copy() for d in texts)) == values(nlp, factory, nlp.pipe(texts))
    assert after >= before - 0.2, (before, after)
    assert len(new) >= 20 and sum(new) / len(new) > 0.5, (sum(new), len(new))


@pytest.mark.parametrize("transitions,emissions", [("full", "full"), ("factored", "composed")])
def test_added_labels_never_win_before_training(transitions, emissions):
    """On random weights and inputs, the grown network's Viterbi paths and
    its old labels' scores equal the old network's."""
    torch.manual_seed(0)
    classes = [0, 0, 1, 1, 2]
    parts = [[0], [0, 1], [2], [2, 3], [4]]
    settings = {"hidden_width": 8, "depth": 1, "transitions": transitions, "emissions": emissions}
    network = BiLSTMCRF(6, 5, classes=classes, parts=parts, **settings)
    with torch.no_grad():
        for param in network.parameters():
            param.normal_()
    network.eval()
    grown = grown_network(
        network,
        settings,
        [1, 4],
        classes=[0, 0, 1, 1, 2, 0, 3],
        class_sources=[0, 1, 2, 2],
        parts=[[0], [0, 1], [2], [2, 3], [4], [0, 1], [4, 5]],
        part_sources=[0, 1, 2, 3, 4, -1],
    ).eval()
    inputs = torch.randn(4, 7, 6)
    lengths = torch.tensor([7, 3, 1, 0])
    old, new = network(inputs, lengths), grown(inputs, lengths)
    assert torch.equal(new.emissions[..., :5], old.emissions)
    assert torch.equal(new.transitions[:5, :5], network.transition_scores())
    if emissions == "full":
        assert torch.equal(viterbi_decode(new)[0], viterbi_decode(old)[0])


def test_learn_new_labels_is_off_by_default():
    nlp = make_nlp(small_model("full", "full"))
    assert nlp.get_pipe("crf_tagger").learn_new_labels is False
    assert nlp.config["components"]["crf_tagger"]["learn_new_labels"] is False
    assert torch_network(nlp.get_pipe("crf_tagger").model) is None
