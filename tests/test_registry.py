"""Registered names resolve, and entry points find them in a fresh process."""
import subprocess
import sys

import pytest
import spacy

import spacy_crf

REGISTERED = [
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
    ("schedules", "spacy_crf.warmup_linear.v1"),
]
# the entry point group of each registry (schedules are Thinc's)
GROUPS = {"architectures": "spacy_architectures", "scorers": "spacy_scorers", "schedules": "thinc_schedules"}


@pytest.mark.parametrize("registry_name,func_name", REGISTERED)
def test_registered_names_resolve(registry_name, func_name):
    assert callable(getattr(spacy.registry, registry_name).get(func_name))


def test_factory_is_registered():
    assert "crf_tagger" in spacy.registry.factories


def test_entry_points_work_without_importing_spacy_crf():
    code = (
        "import sys, spacy\n"
        "nlp = spacy.blank('en')\n"
        "nlp.add_pipe('crf_tagger')\n"
        "for kind, name in [('architectures', 'spacy_crf.BiLSTMCRF.v1'),"
        " ('architectures', 'spacy_crf.BiLSTMCRF.v2'),"
        " ('architectures', 'spacy_crf.HashCharEmbed.v1'),"
        " ('architectures', 'spacy_crf.HashCharEmbed.v4'),"
        " ('architectures', 'spacy_crf.CharCNN.v1'),"
        " ('architectures', 'spacy_crf.BiLSTMCRF.v3'),"
        " ('scorers', 'spacy_crf.crf_tagger_scorer.v1'),"
        " ('scorers', 'spacy_crf.crf_tagger_scorer.v2'),"
        " ('schedules', 'spacy_crf.warmup_linear.v1')]:\n"
        "    getattr(spacy.registry, kind).get(name)\n"
        "print(nlp.pipe_names)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "['crf_tagger']" in result.stdout


def test_public_exports_match_the_registered_names():
    """One export of spacy_crf per registered version, and an entry point each."""
    from importlib.metadata import entry_points

    exported = {getattr(spacy_crf, name) for name in spacy_crf.__all__}
    for registry_name, func_name in REGISTERED:
        assert getattr(spacy.registry, registry_name).get(func_name) in exported, func_name
    declared = {(ep.group, ep.name) for group in GROUPS.values() for ep in entry_points(group=group)}
    for registry_name, func_name in REGISTERED:
        assert (GROUPS[registry_name], func_name) in declared


def test_one_version_string():
    from importlib.metadata import version

    assert version("spacy-crf") == spacy_crf.__version__
