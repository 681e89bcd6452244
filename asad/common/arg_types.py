"""Argument types for the CLI and the benches: a bad value is a usage error (exit 2) that names
what was expected, never a traceback from deep inside a command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable


def _checked(text: str, kind: type, what: str, ok, rule: str) -> float:  # noqa: ANN001
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {rule}, not {text}")
    return value


def positive_int(text: str) -> int:
    return int(_checked(text, int, "a whole number", lambda v: v >= 1, "1 or more"))


def non_negative_int(text: str) -> int:
    return int(_checked(text, int, "a whole number", lambda v: v >= 0, "0 or more"))


def positive_float(text: str) -> float:
    return _checked(text, float, "a number", lambda v: v > 0, "more than 0")


def non_negative_float(text: str) -> float:
    return _checked(text, float, "a number", lambda v: v >= 0, "0 or more")


def positive_seconds(text: str) -> float:
    return _checked(text, float, "a number of seconds", lambda v: v > 0, "more than 0 seconds")


def duration(text: str) -> str:
    """A time limit as Slurm writes it; checked here so that a typo is a usage error."""
    from asad.common.units import UnitError, parse_duration_s

    try:
        parse_duration_s(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def int_list(text: str) -> str:
    """Comma-separated whole numbers of 0 or more (seeds): returned as given, once checked."""
    for word in text.split(","):
        non_negative_int(word.strip())
    return text


def word_list(choices: Iterable[str], what: str) -> Callable[[str], str]:
    """A comma-separated list of names from ``choices``: returned as given, once checked."""
    known = sorted(choices)

    def check(text: str) -> str:
        for word in text.split(","):
            if word.strip() not in known:
                raise argparse.ArgumentTypeError(f"unknown {what} {word.strip()!r}; choose from {', '.join(known)}")
        return text
    return check
