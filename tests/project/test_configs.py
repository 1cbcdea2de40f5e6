"""The shipped configs train with `spacy train` as they are."""

import importlib

import pytest
import spacy
from thinc.api import Config

from spacy_crf.components.settings import TAGGER_0X_SETTINGS

from ..helpers import CONFIGS, SENTENCES, run_spacy, write_docbin


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.glob("*.cfg")))
def test_shipped_configs_are_complete(config, tmp_path):
    """`spacy init fill-config` adds nothing: every setting is explicit."""
    init_config = importlib.import_module("spacy.cli.init_config")
    init_config.fill_config(tmp_path / "filled.cfg", CONFIGS / config, silent=True)
    shipped = Config().from_disk(CONFIGS / config, interpolate=False)
    filled = Config().from_disk(tmp_path / "filled.cfg", interpolate=False)
    # crf_tagger's 0.x entity settings are filled in (0.x configs must load), never needed
    for name, component in filled["components"].items():
        if component.get("factory") == "crf_tagger" and name in shipped["components"]:
            for key in (setting.name for setting in TAGGER_0X_SETTINGS):
                if key not in shipped["components"][name]:
                    del component[key]
    assert shipped == filled
    nlp = spacy.util.load_model_from_config(spacy.util.load_config(CONFIGS / config))
    nlp.create_optimizer()  # what nlp.resume_training() does: no unresolved ${...}
    assert nlp.pipe_names[-1] in (
        "crf_tagger",
        "crf_morphologizer",
        "crf_ner",
        "tagger",
        "morphologizer",
        "ner",
        "beam_ner",
    )


@pytest.mark.slow
def test_spacy_train_with_cpu_config(tmp_path):
    write_docbin(tmp_path / "train.spacy")
    run_spacy(
        "train",
        str(CONFIGS / "cpu.cfg"),
        "--output",
        str(tmp_path / "out"),
        "--paths.train",
        str(tmp_path / "train.spacy"),
        "--paths.dev",
        str(tmp_path / "train.spacy"),
        "--training.max_steps",
        "30",
        "--training.eval_frequency",
        "10",
    )
    nlp = spacy.load(tmp_path / "out" / "model-last")
    doc = nlp("I like green ham .")
    labels = set(nlp.get_pipe("crf_tagger").labels)
    assert labels == {tag for _, tags in SENTENCES for tag in tags}
    assert all(token.tag_ in labels for token in doc)
    output = run_spacy("evaluate", str(tmp_path / "out" / "model-last"), str(tmp_path / "train.spacy"))
    assert "TAG" in output


@pytest.mark.parametrize(
    "factory,config",
    [
        ("crf_tagger", "cpu.cfg"),
        ("crf_morphologizer", "cpu_morph.cfg"),
        ("crf_ner", "ner_cpu.cfg"),
    ],
)
def test_each_factory_default_is_the_network_of_its_cpu_config(factory, config):
    """`nlp.add_pipe(factory)` gets the shipped CPU config's network."""
    shipped = Config().from_disk(CONFIGS / config, interpolate=False)["components"][factory]["model"]
    shipped = {key: value for key, value in shipped.items() if key != "nO"}
    nlp = spacy.blank("en")
    nlp.add_pipe(factory)
    default = {key: value for key, value in nlp.config["components"][factory]["model"].items() if key != "nO"}
    assert shipped == default


def test_the_beam_ner_config_is_the_ner_baseline_with_a_beam():
    """configs/ner_beam.cfg trains spaCy's beam_ner on configs/ner_baseline.cfg's
    features and setup: only the factory and its beam settings (spaCy's defaults) differ."""
    beam = Config().from_disk(CONFIGS / "ner_beam.cfg", interpolate=False)
    greedy = Config().from_disk(CONFIGS / "ner_baseline.cfg", interpolate=False)
    settings = beam["components"]["ner"]
    assert settings["factory"] == "beam_ner" and greedy["components"]["ner"]["factory"] == "ner"
    defaults = spacy.blank("en").add_pipe("beam_ner").cfg
    beam_keys = ("beam_width", "beam_density", "beam_update_prob")
    assert {key: settings[key] for key in beam_keys} == {key: defaults[key] for key in beam_keys}
    for key in ("factory", *beam_keys):
        del settings[key]
    del greedy["components"]["ner"]["factory"]
    assert beam == greedy
