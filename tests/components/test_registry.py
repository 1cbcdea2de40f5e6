"""Registered names resolve, and entry points find them in a fresh process."""

import subprocess
import sys

import pytest
import spacy

import spacy_crf

# the newest version of each name (exported by spacy_crf)
CURRENT = [
    ("architectures", "spacy_crf.BiLSTMCRF.v4"),
    ("architectures", "spacy_crf.HashCharEmbed.v5"),
    ("architectures", "spacy_crf.CharCNN.v2"),
    ("scorers", "spacy_crf.tagger_scorer.v1"),
    ("scorers", "spacy_crf.morphologizer_scorer.v1"),
    ("scorers", "spacy_crf.ner_scorer.v1"),
    ("readers", "spacy_crf.SentencesAndDocs.v1"),
    ("schedules", "spacy_crf.warmup_linear.v1"),
    ("callbacks", "spacy_crf.learn_new_labels.v1"),
]
# superseded versions (spacy_crf.ml.legacy, spacy_crf.scoring.legacy): registered so that old configs load
LEGACY = [
    ("architectures", "spacy_crf.BiLSTMCRF.v1"),
    ("architectures", "spacy_crf.BiLSTMCRF.v2"),
    ("architectures", "spacy_crf.BiLSTMCRF.v3"),
    ("architectures", "spacy_crf.HashCharEmbed.v1"),
    ("architectures", "spacy_crf.HashCharEmbed.v2"),
    ("architectures", "spacy_crf.HashCharEmbed.v3"),
    ("architectures", "spacy_crf.HashCharEmbed.v4"),
    ("architectures", "spacy_crf.CharCNN.v1"),
    ("scorers", "spacy_crf.crf_tagger_scorer.v1"),
    ("scorers", "spacy_crf.crf_tagger_scorer.v2"),
]
REGISTERED = CURRENT + LEGACY
FACTORIES = ["crf_tagger", "crf_morphologizer", "crf_ner"]
# the entry point group of each registry (schedules are Thinc's)
GROUPS = {
    "architectures": "spacy_architectures",
    "scorers": "spacy_scorers",
    "readers": "spacy_readers",
    "schedules": "thinc_schedules",
    "callbacks": "spacy_callbacks",
}

REGISTRY_OF = {group: registry_name for registry_name, group in GROUPS.items()}


@pytest.mark.parametrize("registry_name,func_name", REGISTERED)
def test_registered_names_resolve(registry_name, func_name):
    assert callable(getattr(spacy.registry, registry_name).get(func_name))


def test_factories_are_registered():
    for name in FACTORIES:
        assert name in spacy.registry.factories


def test_entry_points_work_without_importing_spacy_crf():
    code = (
        "import sys, spacy\n"
        "nlp = spacy.blank('en')\n"
        f"for factory in {FACTORIES!r}:\n"
        "    nlp.add_pipe(factory)\n"
        f"for kind, name in {REGISTERED!r}:\n"
        "    getattr(spacy.registry, kind).get(name)\n"
        "print(nlp.pipe_names)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert str(FACTORIES) in result.stdout


def test_public_exports_match_the_registered_names():
    """One export of spacy_crf per current name, one of spacy_crf.ml.legacy or
    spacy_crf.scoring.legacy per superseded one, and an entry point each
    (factories included)."""
    from importlib.metadata import entry_points

    from spacy_crf.ml import legacy as legacy_architectures
    from spacy_crf.scoring import legacy as legacy_scorers

    exported = {getattr(spacy_crf, name) for name in spacy_crf.__all__}
    for registry_name, func_name in CURRENT:
        assert getattr(spacy.registry, registry_name).get(func_name) in exported, func_name
    in_legacy = {
        value for module in (legacy_architectures, legacy_scorers) for value in vars(module).values() if callable(value)
    }
    for registry_name, func_name in LEGACY:
        assert getattr(spacy.registry, registry_name).get(func_name) in in_legacy, func_name
    declared = {(ep.group, ep.name) for group in GROUPS.values() for ep in entry_points(group=group)}
    for registry_name, func_name in REGISTERED:
        assert (GROUPS[registry_name], func_name) in declared, func_name
    # each entry point's module path is where the function is (modules move; names do not)
    for group in GROUPS.values():
        for ep in entry_points(group=group):
            if ep.name.startswith("spacy_crf."):
                assert ep.load() is getattr(spacy.registry, REGISTRY_OF[group]).get(ep.name), ep.name
    factories = {ep.name for ep in entry_points(group="spacy_factories")}
    assert set(FACTORIES) <= factories


def test_current_architectures_are_keyword_only_without_defaults():
    """spaCy's convention: every hyperparameter spelled out in the config."""
    import inspect

    for registry_name, func_name in CURRENT:
        if registry_name != "architectures":
            continue
        params = list(inspect.signature(spacy.registry.architectures.get(func_name)).parameters.values())
        settings = [p for p in params if p.name not in ("tok2vec", "nO")]
        assert all(p.kind is p.KEYWORD_ONLY for p in settings), func_name
        assert all(p.default is p.empty for p in settings), func_name


def test_one_version_string():
    from importlib.metadata import version

    assert version("spacy-crf") == spacy_crf.__version__
