"""The docs site builds with `mkdocs build --strict` and without a single
warning: broken links and anchors, pages left out of the nav, and
docstrings that mkdocstrings cannot render (the settings tables of the
factories and architectures) all fail it."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (the docs extra)")
def test_docs_build_strict_without_warnings(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--clean",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # mkdocs-material's banner about its successor
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    # the architectures' settings, rendered by mkdocstrings from their docstrings
    html = (tmp_path / "site" / "architectures" / "index.html").read_text()
    assert html.count('class="doc doc-object doc-function"') == 3
    # each component's settings table, rendered from the settings' declarations, with the defaults
    from spacy_crf.components.settings import ENTITY_RECOGNIZER_SETTINGS, MORPHOLOGIZER_SETTINGS, TAGGER_SETTINGS

    for page, settings in (
        ("tagger", TAGGER_SETTINGS),
        ("morphologizer", MORPHOLOGIZER_SETTINGS),
        ("ner", ENTITY_RECOGNIZER_SETTINGS),
    ):
        html = (tmp_path / "site" / page / "index.html").read_text()
        for setting in settings:
            assert f"<code>{setting.name}</code>" in html, (page, setting.name)
    assert (tmp_path / "site" / "benchmarks" / "index.html").exists()


def flat(section: dict, prefix: str = "") -> dict:
    """A nested config section as {"a.b.c": value}."""
    out = {}
    for key, value in section.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# settings of the 0.x entity target that crf_tagger still accepts (deprecated):
# in its filled config, left out of its page
DEPRECATED = {
    "crf_tagger": {
        "store_entity_probs",
        "ents_threshold",
        "candidates_key",
        "candidates_threshold",
        "incorrect_spans_key",
    }
}


@pytest.mark.parametrize(
    "page,factory", [("tagger.md", "crf_tagger"), ("morphologizer.md", "crf_morphologizer"), ("ner.md", "crf_ner")]
)
def test_the_config_of_each_component_page_is_the_factorys_defaults(page, factory):
    """Each component page writes out its factory's defaults: what
    `nlp.add_pipe(factory)` builds, setting by setting."""
    import spacy
    from thinc.api import Config

    text = (ROOT / "docs" / page).read_text()
    block = text.split("## In a config", 1)[1].split("```ini\n", 1)[1].split("```", 1)[0]
    shown = flat(Config().from_str("[components]\n" + block, interpolate=False)["components"][factory])
    nlp = spacy.blank("en")
    nlp.add_pipe(factory)
    built = flat(nlp.config["components"][factory])
    assert shown == {key: value for key, value in built.items() if key not in DEPRECATED.get(factory, ())}
