"""Every Python block of README.md and docs/ runs as written, the blocks of
a page in order in one namespace (as a user pastes them), in a fresh
folder; a block that needs what a page cannot give (a trained pipeline, a
cluster) says so in a `<!-- fragment: ... -->` line right above it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- fragment: [^\n]+ -->\n)?```python\n(.*?)```", re.S)


def blocks(page):
    """The page's Python blocks, (is a fragment, code), in order."""
    text = (ROOT / page).read_text(encoding="utf8")
    return [(bool(match.group(1)), match.group(2)) for match in BLOCK.finditer(text)]


def test_every_python_block_is_read():
    """Each ```python fence of a page is one block (none hidden by the pattern)."""
    for page in PAGES:
        assert len(blocks(page)) == (ROOT / page).read_text(encoding="utf8").count("```python\n"), page


@pytest.mark.parametrize("page", [page for page in PAGES if any(not fragment for fragment, _ in blocks(page))])
def test_the_runnable_blocks_of_the_page_run_in_order(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for fragment, code in blocks(page):
        if not fragment:
            exec(compile(code, f"{page} block", "exec"), namespace)
