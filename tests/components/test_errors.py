"""Every coded error message formats: a broken placeholder is a real bug."""

import re
import string

import pytest

from spacy_crf.errors import RETIRED, Errors

CODES = sorted(name for name in vars(Errors) if re.fullmatch(r"E\d{3}", name))


def test_codes_are_unique_and_never_reused():
    """A retired code is never defined again; codes are numbered in ranges
    that work on different branches takes (so a range may have gaps)."""
    assert not set(CODES) & set(RETIRED)
    assert len(set(CODES)) == len(CODES)


@pytest.mark.parametrize("code", CODES)
def test_error_message_formats(code):
    template = getattr(Errors, code)
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    message = template.format(**{name: f"<{name}>" for name in fields})
    assert message.startswith(f"[{code}] ")
    for name in fields:
        assert f"<{name}>" in message
    assert "{" not in message and "}" not in message
