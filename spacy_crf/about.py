"""The package's version: the one place it is written (pyproject.toml reads it)."""

__version__ = "1.0.0"
