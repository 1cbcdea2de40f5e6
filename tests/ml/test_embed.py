"""spacy_crf.HashCharEmbed.v2 and its known-word list (min_count, word_dropout)."""

import numpy
import pytest
import spacy
from spacy.ml.featureextractor import FeatureExtractor
from spacy.training import Example
from thinc.api import list2ragged

from spacy_crf.ml.embed import UNKNOWN_WORD

from ..helpers import HASH_CHAR_EMBED, SMALL_MODEL, assert_same_weights

EMBED = HASH_CHAR_EMBED
MODEL = {**SMALL_MODEL, "tok2vec": EMBED}
TRAIN_DATA = [
    ("I like green eggs", ["N", "V", "J", "N"]),
    ("I like ham", ["N", "V", "N"]),
    ("Eat green ham", ["V", "J", "N"]),
]


def make_nlp(**embed):
    nlp = spacy.blank("en")
    model = {**MODEL, "tok2vec": {**EMBED, **embed}}
    nlp.add_pipe("crf_tagger", config={"model": model})
    return nlp


def examples(nlp):
    return [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN_DATA]


def known_layer(nlp):
    return next(n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "known_words")


def features(doc, attrs):
    """The (n_tokens, n_attrs) keys the embedding hashes, as a Ragged."""
    return list2ragged()(FeatureExtractor(attrs)([doc], False)[0], False)[0]


def norms(nlp, words):
    return sorted(nlp.vocab.strings[w] for w in words)


def test_known_words_are_the_words_seen_min_count_times():
    nlp = make_nlp()
    nlp.initialize(lambda: examples(nlp))
    # "i", "like", "green", "ham" occur twice; "eggs", "eat" once
    assert list(known_layer(nlp).attrs["known"]) == norms(nlp, ["i", "like", "green", "ham"])


def test_unknown_words_share_one_key():
    nlp = make_nlp()
    nlp.initialize(lambda: examples(nlp))
    layer = known_layer(nlp)
    keys = features(nlp.make_doc("I like purple eggs"), ["NORM", "SHAPE"])
    mapped, _ = layer(keys, is_train=False)
    words = mapped.dataXd[:, 0]
    assert words[0] == nlp.vocab.strings["i"] and words[1] == nlp.vocab.strings["like"]
    assert words[2] == UNKNOWN_WORD and words[3] == UNKNOWN_WORD
    # the other columns are untouched
    assert numpy.array_equal(mapped.dataXd[:, 1], keys.dataXd[:, 1])


def test_word_dropout_only_while_training():
    nlp = make_nlp(word_dropout=1.0)
    nlp.initialize(lambda: examples(nlp))
    layer = known_layer(nlp)
    keys = features(nlp.make_doc("I like ham"), ["NORM"])
    assert (layer(keys, is_train=True)[0].dataXd[:, 0] == UNKNOWN_WORD).all()
    assert (layer(keys, is_train=False)[0].dataXd[:, 0] != UNKNOWN_WORD).all()


def trained_nlp(nlp=None):
    """A pipeline (by default make_nlp()) trained until it fits TRAIN_DATA."""
    nlp = nlp or make_nlp()
    egs = examples(nlp)
    optimizer = nlp.initialize(lambda: egs)
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    for text, tags in TRAIN_DATA:
        assert [t.tag_ for t in nlp(text)] == tags
    return nlp


def test_known_words_are_saved_with_the_model(tmp_path):
    nlp = trained_nlp()
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    assert_same_weights(nlp.get_pipe("crf_tagger"), loaded.get_pipe("crf_tagger"))
    assert numpy.array_equal(known_layer(loaded).attrs["known"], known_layer(nlp).attrs["known"])
    texts = ["I like purple eggs", "Eat ham", "zzz"]
    assert [[t.tag_ for t in d] for d in loaded.pipe(texts)] == [[t.tag_ for t in d] for d in nlp.pipe(texts)]


def test_an_empty_known_word_list_is_a_coded_error():
    nlp = make_nlp()
    tagger = nlp.get_pipe("crf_tagger")
    tok2vec = tagger.model.get_ref("tok2vec")
    tok2vec.initialize()  # not through crf_tagger.initialize: no word list
    with pytest.raises(ValueError, match=r"\[E016\]"):
        tok2vec.predict([nlp.make_doc("I like ham")])


def test_no_word_reaching_min_count_makes_every_word_unknown():
    nlp = make_nlp(min_count=10)
    egs = examples(nlp)
    optimizer = nlp.initialize(lambda: egs)
    assert known_layer(nlp).attrs["counted"] and len(known_layer(nlp).attrs["known"]) == 0
    nlp.update(egs, sgd=optimizer)
    keys = features(nlp.make_doc("I like ham"), ["NORM"])
    assert (known_layer(nlp)(keys, is_train=False)[0].dataXd[:, 0] == UNKNOWN_WORD).all()
    assert len(nlp("I like ham")) == 3


def test_min_count_zero_embeds_every_word():
    nlp = make_nlp(min_count=0)
    nlp.initialize(lambda: examples(nlp))
    assert not [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "known_words"]


@pytest.mark.gpu
def test_known_words_on_gpu():
    from thinc.api import get_current_ops, require_gpu, set_current_ops

    cpu_ops = get_current_ops()
    require_gpu()
    try:
        trained_nlp()
    finally:
        set_current_ops(cpu_ops)  # use_ops() is a context manager: a bare call restores nothing


def test_v1_embedding_trains_and_round_trips():
    """HashCharEmbed.v1 (no known-word list) still builds, trains and reloads
    with equal weights: models saved with it keep loading."""
    v1 = {k: v for k, v in EMBED.items() if k not in ("min_count", "word_dropout")}
    v1["@architectures"] = "spacy_crf.HashCharEmbed.v1"
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {**MODEL, "tok2vec": v1}})
    trained_nlp(nlp)
    assert not [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "known_words"]
    fresh = spacy.blank("en")
    fresh.add_pipe("crf_tagger", config={"model": {**MODEL, "tok2vec": v1}})
    fresh.from_bytes(nlp.to_bytes())
    assert_same_weights(nlp.get_pipe("crf_tagger"), fresh.get_pipe("crf_tagger"))


def test_known_words_of_a_shared_tok2vec_are_counted_over_all_the_data(tmp_path):
    """HashCharEmbed.v2 in a tok2vec component that crf_tagger listens to:
    its known-word list comes from every training example, not the first ten
    that initialize the tok2vec."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": EMBED})
    listener = {**MODEL, "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "width": 16, "upstream": "*"}}
    nlp.add_pipe("crf_tagger", config={"model": listener})
    data = TRAIN_DATA * 4 + [("Eat eggs", ["V", "N"])] * 2  # "eat" reaches min_count late
    egs = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in data]
    optimizer = nlp.initialize(lambda: egs)
    layer = next(n for n in nlp.get_pipe("tok2vec").model.walk() if n.name == "known_words")
    assert list(layer.attrs["known"]) == norms(nlp, ["i", "like", "green", "eggs", "ham", "eat"])
    for _ in range(20):
        nlp.update(egs, sgd=optimizer)
    expected = [t.tag_ for t in nlp("I like green eggs")]
    nlp.to_disk(tmp_path)
    again = spacy.load(tmp_path)
    loaded = next(n for n in again.get_pipe("tok2vec").model.walk() if n.name == "known_words")
    assert list(loaded.attrs["known"]) == list(layer.attrs["known"])
    assert [t.tag_ for t in again("I like green eggs")] == expected
