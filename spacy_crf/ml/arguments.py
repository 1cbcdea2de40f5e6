"""The checks of the architectures' settings, made when a model is built
(before `initialize`), each with a coded error (E041) that names the setting
and what it takes."""

from typing import Any, Callable, Tuple

from ..errors import Errors

Rule = Tuple[str, Callable[[Any], bool]]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


POSITIVE: Rule = ("a whole number > 0", lambda value: _is_int(value) and value > 0)
WHOLE: Rule = ("a whole number >= 0", lambda value: _is_int(value) and value >= 0)
RATE: Rule = ("a dropout rate from 0 to less than 1", lambda value: _is_number(value) and 0.0 <= value < 1.0)
FLAG: Rule = ("true or false", lambda value: isinstance(value, bool))


def check_arguments(architecture: str, **arguments: Tuple[Any, Rule]) -> None:
    """Raise ValueError E041 for the first argument (value, rule) that its rule refuses."""
    for setting, (value, (allowed, check)) in arguments.items():
        if not check(value):
            raise ValueError(
                Errors.E041.format(architecture=architecture, setting=setting, value=value, allowed=allowed)
            )
