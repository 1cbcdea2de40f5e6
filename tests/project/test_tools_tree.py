"""The tools tree: the template's scripts/ and the benchmark harness's
benchmarks/ do not import each other, and every module of either is run or
imported somewhere (a project.yml, the docs, another module or a test)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def imported_packages(path):
    """The top-level packages a module imports (relative imports excluded)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("folder,other", [("scripts", "benchmarks"), ("benchmarks", "scripts")])
def test_neither_tool_folder_imports_the_other(folder, other):
    offenders = [p.name for p in sorted((ROOT / folder).glob("*.py")) if other in imported_packages(p)]
    assert offenders == []


def test_every_tool_module_is_used():
    texts = [p.read_text(encoding="utf8") for p in ROOT.glob("*.yml")]
    texts += [p.read_text(encoding="utf8") for p in (ROOT / "benchmarks").glob("*.yml")]
    texts += [p.read_text(encoding="utf8") for p in (ROOT / "docs").glob("*.md")]
    for folder in ("scripts", "benchmarks", "tests", "spacy_crf"):
        texts += [p.read_text(encoding="utf8") for p in (ROOT / folder).rglob("*.py")]
    for folder in ("scripts", "benchmarks"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.stem in ("__init__", "root", "common"):
                continue
            name = path.stem
            own = path.read_text(encoding="utf8")
            pattern = re.compile(
                rf"\b{folder}[./]{name}\b|from \.{name} import|from \. import {name}\b|\b{folder} import {name}\b"
            )
            assert any(pattern.search(text) for text in texts if text is not own), f"{folder}/{name}.py is used nowhere"
