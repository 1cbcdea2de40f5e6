"""The settings spine (spacy_crf/components/settings.py): each setting is
declared once, the factories' signatures and default configs agree with the
declarations, and every bad value is refused when the component is built."""

import inspect

import pytest
import spacy
from spacy.util import registry

import spacy_crf  # noqa: F401 (registers the factories)
from spacy_crf.components import CRFEntityRecognizer, CRFMorphologizer, CRFTagger
from spacy_crf.components.settings import (
    ENTITY_RECOGNIZER_SETTINGS,
    MORPHOLOGIZER_SETTINGS,
    TAGGER_0X_SETTINGS,
    TAGGER_SETTINGS,
    settings_table,
)

SPINES = {
    "crf_tagger": TAGGER_SETTINGS,
    "crf_morphologizer": MORPHOLOGIZER_SETTINGS,
    "crf_ner": ENTITY_RECOGNIZER_SETTINGS,
}
CLASSES = {"crf_tagger": CRFTagger, "crf_morphologizer": CRFMorphologizer, "crf_ner": CRFEntityRecognizer}
# values each setting refuses, by kind of setting
BAD = {
    bool: [2, "yes", None],
    int: [-5, 1.5, True, "8"],
    str: ["nope", 3, None],
}


@pytest.mark.parametrize("factory", sorted(SPINES))
def test_factory_signature_and_defaults_come_from_the_declarations(factory):
    spine = SPINES[factory]
    names = [setting.name for setting in spine]
    assert len(names) == len(set(names))
    meta = spacy.Language.get_factory_meta(factory)
    assert {key: meta.default_config[key] for key in names} == {s.name: s.default for s in spine}
    legacy = {setting.name for setting in TAGGER_0X_SETTINGS} if factory == "crf_tagger" else set()
    assert set(meta.default_config) == set(names) | {"model", "scorer"}
    parameters = set(inspect.signature(registry.factories.get(factory)).parameters)
    assert parameters == set(names) | {"nlp", "name", "model", "scorer"} | legacy
    assert CLASSES[factory].SETTINGS is spine
    # the class takes each setting as a named argument, with its declared default
    init = inspect.signature(CLASSES[factory].__init__).parameters
    assert {name: init[name].default for name in names} == {s.name: s.default for s in spine}
    for setting in spine:
        assert setting.check(setting.default), setting.name
        assert setting.description and setting.allowed


def _bad_values(setting):
    if isinstance(setting.default, bool):
        return BAD[bool]
    if isinstance(setting.default, int):
        return BAD[int]
    if setting.default is None:
        return [3, ""]
    if isinstance(setting.default, float):
        return [-0.5, 1.5, "x", True]
    return BAD[str]


@pytest.mark.parametrize("factory", sorted(SPINES))
def test_every_bad_value_is_refused_at_add_pipe_naming_the_setting(factory):
    for setting in SPINES[factory]:
        for value in _bad_values(setting):
            if setting.check(value):
                continue
            nlp = spacy.blank("en")
            # a value of the wrong type is spaCy's config validation's to refuse; the rest is E039
            with pytest.raises(Exception, match=rf"\[E039\].*{setting.name} = |{factory} -> {setting.name}\t") as info:
                nlp.add_pipe(factory, config={setting.name: value})
            if "[E039]" in str(info.value):
                assert setting.allowed.split(":")[0] in str(info.value)


def test_window_minus_five_and_dropout_two_are_refused_before_initialize():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[E039\].*window = -5"):
        nlp.add_pipe("crf_tagger", config={"window": -5})
    with pytest.raises(Exception, match=r"\[E041\].*BiLSTMCRF.v4.*dropout = 2.0"):
        nlp.add_pipe("crf_tagger", config={"model": {"dropout": 2.0}})
    with pytest.raises(Exception, match=r"\[E041\].*HashCharEmbed.v5.*width = 0"):
        nlp.add_pipe("crf_ner", config={"model": {"tok2vec": {"width": 0}}})
    with pytest.raises(Exception, match=r"\[E041\].*hidden_width"):
        nlp.add_pipe("crf_morphologizer", config={"model": {"hidden_width": -1}})


def test_crf_ner_scheme_error_names_only_its_own_setting():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[E039\]") as info:
        nlp.add_pipe("crf_ner", config={"scheme": "BIOES"})
    message = str(info.value)
    assert "scheme = 'BIOES'" in message and "constraints" not in message and "auto" not in message


def test_a_class_built_directly_checks_too_and_refuses_unknown_settings():
    nlp = spacy.blank("en")
    model = nlp.add_pipe("crf_tagger").model
    with pytest.raises(TypeError, match="windw"):
        CRFTagger(nlp.vocab, model, windw=3)
    with pytest.raises(ValueError, match=r"\[E039\].*batch_words"):
        CRFTagger(nlp.vocab, model, batch_words=-1)
    tagger = CRFTagger(nlp.vocab, model)
    assert tagger.name == "crf_tagger" and tagger.cfg["window"] == 8192 and tagger.threads == 0


def test_saved_cfg_holds_what_was_learned_only(tmp_path):
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("crf_tagger", config={"window": 64})
    tagger.add_label("NN")
    nlp.initialize()
    nlp.to_disk(tmp_path)
    saved = spacy.util.srsly.read_json(tmp_path / "crf_tagger" / "cfg")
    assert set(saved) == {"labels", "target", "temperature", "trained", "checksum"}
    again = spacy.load(tmp_path)
    assert again.get_pipe("crf_tagger").cfg["window"] == 64  # from config.cfg


@pytest.mark.parametrize("factory", sorted(SPINES))
def test_settings_table_lists_every_setting_with_its_default(factory):
    table = settings_table(SPINES[factory])
    for setting in SPINES[factory]:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{setting.name}` |"))
        assert row.count("|") >= 5
