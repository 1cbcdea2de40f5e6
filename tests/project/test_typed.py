"""The public API is annotated, the package says so (PEP 561's py.typed, in
the wheel's package data), and every `type: ignore` names its code and why.
mypy itself runs in .ci/run (`mypy`, configured in pyproject.toml), and
checks tests/project/typed_usage.py against the installed wheel there."""

import inspect
import re
import sys
from pathlib import Path

import spacy_crf

ROOT = Path(__file__).resolve().parents[2]


def _unannotated(name, function):
    signature = inspect.signature(function)
    missing = [
        f"{name}({parameter.name})"
        for parameter in signature.parameters.values()
        if parameter.name not in ("self", "cls") and parameter.annotation is inspect.Parameter.empty
    ]
    if signature.return_annotation is inspect.Signature.empty and not name.endswith("__init__"):
        missing.append(f"{name} -> ?")
    return missing


def _public_callables():
    for name in spacy_crf.__all__:
        obj = getattr(spacy_crf, name)
        if not inspect.isclass(obj):
            if callable(obj):
                yield name, obj
            continue
        for klass in obj.__mro__:
            if not klass.__module__.startswith("spacy_crf"):
                continue
            for attr, value in vars(klass).items():
                if attr.startswith("_") and attr not in ("__init__", "__call__"):
                    continue
                if isinstance(value, property):
                    value = value.fget
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if inspect.isfunction(value):
                    yield f"{klass.__name__}.{attr}", value


def test_public_api_is_fully_annotated():
    checked = list(_public_callables())
    assert len(checked) > 50  # the classes' methods, the factories, the architectures
    missing = [gap for name, function in checked for gap in _unannotated(name, function)]
    assert missing == []


def test_the_check_sees_a_missing_annotation():
    def untyped(doc, n: int = 1):
        return doc

    assert _unannotated("untyped", untyped) == ["untyped(doc)", "untyped -> ?"]


def test_the_package_ships_py_typed():
    assert (Path(spacy_crf.__file__).parent / "py.typed").is_file()
    if sys.version_info >= (3, 11):
        import tomllib

        config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))
        assert "py.typed" in config["tool"]["setuptools"]["package-data"]["spacy_crf"]


def test_every_type_ignore_names_its_code_and_why():
    bare = []
    for path in sorted((ROOT / "spacy_crf").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
            if "type: ignore" not in line:
                continue
            if not re.search(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # \S", line):
                bare.append(f"{path.relative_to(ROOT)}:{number}")
    assert bare == []
