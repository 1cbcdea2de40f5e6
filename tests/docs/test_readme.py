"""The shell commands of README.md and docs/index.md are what CI runs: each
line of their ```bash blocks is a line of .ci/run, word for word, or says
what it needs that CI lacks ("# needs the network"). So a command that stops
working on a fresh clone fails CI, and a new user reads only commands that ran."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = ["README.md", "docs/index.md"]
NEEDS = "# needs the network"


def shell_lines(page: Path):
    """The command lines of a Markdown page's ```bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf8"), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def command(line: str) -> str:
    """A line without its trailing comment (two spaces or more, then #)."""
    return re.split(r"\s{2,}#", line)[0].strip()


def ci_commands():
    return {
        command(line)
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


@pytest.mark.parametrize("page", PAGES)
def test_every_shell_command_of_the_page_runs_in_ci(page):
    lines = shell_lines(ROOT / page)
    assert lines, f"{page} has no ```bash block"
    ci = ci_commands()
    not_run = [line for line in lines if command(line) not in ci and NEEDS not in line]
    assert not not_run, f"{page}: commands .ci/run does not run (add them there, or say what they need): {not_run}"


def test_the_quickstart_runs_offline_from_the_embedded_sample():
    """The main job's command is in CI and its data is in the clone."""
    assert "python -m spacy project run all ." in ci_commands()
    sample = ROOT / "assets" / "sample"
    for name in [
        "UD_English-EWT/en_ewt-ud-train.conllu",
        "UD_English-EWT/en_ewt-ud-dev.conllu",
        "UNER_English-EWT/en_ewt-ud-train.iob2",
        "UNER_English-EWT/en_ewt-ud-dev.iob2",
    ]:
        assert (sample / name).stat().st_size > 10_000, name
    assert "Attribution-ShareAlike 4.0" in (sample / "LICENSE.txt").read_text()
    assert "test" not in {p.stem.split("-")[-1] for p in sample.rglob("*") if p.is_file()}


def test_a_missing_or_partial_corpus_names_both_ways(tmp_path, capsys):
    from scripts.check_treebank import main

    (tmp_path / "en_ewt-ud-train.conllu").write_text("")  # a partial copy: an empty file
    assert main(str(tmp_path), "en_ewt-ud-train", "en_ewt-ud-dev.conllu") == 1
    message = capsys.readouterr().err
    assert "en_ewt-ud-train.conllu, en_ewt-ud-dev.conllu" in message
    assert "assets/sample" in message and "python -m spacy project assets ." in message
    assert main(str(ROOT / "assets" / "sample" / "UNER_English-EWT"), "en_ewt-ud-train.iob2", "en_ewt-ud-dev.iob2") == 0
