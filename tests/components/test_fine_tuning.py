"""Fine-tuning a trained component on labels it lacks: E003 in the user's
terms, and `spacy train` on a sourced component through the callback
spacy_crf.learn_new_labels.v1 (a setting beside `source` is not read)."""

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.components import make_learn_new_labels

from ..helpers import make_nlp
from .test_label_growth import MODELS, examples, small_model


def test_crf_ner_e003_names_the_entity_type_and_counts_types():
    fix_random_seed(0)
    nlp = make_nlp(small_model(**MODELS["crf_ner"]), factory="crf_ner")
    optimizer = nlp.initialize(get_examples=lambda: examples(nlp, "crf_ner", 20, 1, new=False))
    city = [eg for eg in examples(nlp, "crf_ner", 20, 3, new=True) if "CITY" in {e.label_ for e in eg.y.ents}]
    with pytest.raises(ValueError, match=r"\[E003\]") as info:
        nlp.update(city[:4], sgd=optimizer)
    message = str(info.value)
    assert "the entity type 'CITY'" in message and "among its 1 entity types" in message
    assert "B-CITY" not in message and "U-CITY" not in message


def test_the_tagger_e003_names_the_tag():
    fix_random_seed(0)
    nlp = make_nlp(small_model(**MODELS["crf_tagger"]))
    optimizer = nlp.initialize(get_examples=lambda: examples(nlp, "crf_tagger", 20, 1, new=False))
    n_tags = len(nlp.get_pipe("crf_tagger").labels)
    with pytest.raises(ValueError, match=rf"the label 'CD', which is not among its {n_tags} labels"):
        nlp.update(examples(nlp, "crf_tagger", 20, 3, new=True), sgd=optimizer)


def test_the_callback_refuses_a_name_that_is_not_a_spacy_crf_component():
    nlp = make_nlp(small_model(**MODELS["crf_tagger"]))
    nlp.add_pipe("sentencizer")
    with pytest.raises(ValueError, match=r"\[E061\].*'tagger'.*no such component.*crf_tagger"):
        make_learn_new_labels(["tagger"])(nlp)
    with pytest.raises(ValueError, match=r"\[E061\].*'sentencizer'.*not a spacy-crf component"):
        make_learn_new_labels(["sentencizer"])(nlp)
    assert make_learn_new_labels(["crf_tagger"])(nlp).get_pipe("crf_tagger").learn_new_labels is True


def test_static_vectors_requested_but_not_loaded_is_e060():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {"tok2vec": {"include_static_vectors": True}}})
    example = Example.from_dict(nlp.make_doc("I like eggs"), {"tags": ["PRP", "VBP", "NNS"]})
    with pytest.raises(ValueError, match=r"\[E060\].*'crf_tagger'.*static vectors"):
        nlp.initialize(lambda: [example])


@pytest.mark.slow
def test_spacy_train_fine_tunes_a_sourced_component_on_new_labels(tmp_path):
    """The documented way (docs/tagger.md): `spacy train` on a config that
    sources a trained crf_tagger learns the new tag CD with the callback in
    [initialize.before_init]; without it, [E003]."""
    from spacy.cli.train import train

    fix_random_seed(0)
    source = make_nlp(small_model(**MODELS["crf_tagger"]))
    old = examples(source, "crf_tagger", 40, 1, new=False)
    optimizer = source.initialize(get_examples=lambda: old)
    for step in range(10):
        source.update(old[(step * 8) % 40 :][:8], sgd=optimizer)
    assert "CD" not in source.get_pipe("crf_tagger").labels
    source.to_disk(tmp_path / "source")
    for split, seed in (("train", 3), ("dev", 4)):
        DocBin(docs=[eg.reference for eg in examples(source, "crf_tagger", 40, seed, new=True)]).to_disk(
            tmp_path / f"{split}.spacy"
        )
    config = source.config.copy()
    config["components"]["crf_tagger"] = {"source": str(tmp_path / "source")}
    config["training"].update(max_steps=12, eval_frequency=6)
    config.to_disk(tmp_path / "plain.cfg")
    overrides = {"paths.train": str(tmp_path / "train.spacy"), "paths.dev": str(tmp_path / "dev.spacy")}
    with pytest.raises(ValueError, match=r"\[E003\].*'CD'"):
        train(tmp_path / "plain.cfg", tmp_path / "plain", overrides=overrides)
    config["initialize"]["before_init"] = {"@callbacks": "spacy_crf.learn_new_labels.v1", "components": ["crf_tagger"]}
    config.to_disk(tmp_path / "fine_tune.cfg")
    train(tmp_path / "fine_tune.cfg", tmp_path / "fine_tune", overrides=overrides)
    tuned = spacy.load(tmp_path / "fine_tune" / "model-last")
    assert "CD" in tuned.get_pipe("crf_tagger").labels
    assert set(source.get_pipe("crf_tagger").labels) < set(tuned.get_pipe("crf_tagger").labels)
