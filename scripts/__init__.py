"""The spaCy project's helper scripts; run each from the repository root as `python -m scripts.NAME`."""
