"""Flag helpers: every flag is accepted in the seed's snake_case and in kebab-case."""

from __future__ import annotations

import argparse
from typing import Any


def flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, **kwargs: Any) -> None:
    """Add ``--name_with_underscores`` and ``--name-with-dashes`` as one option."""
    snake = name.replace("-", "_")
    kebab = name.replace("_", "-")
    names = [f"--{snake}"] + ([f"--{kebab}"] if kebab != snake else [])
    kwargs.setdefault("dest", snake)
    parser.add_argument(*names, **kwargs)


def int_or_all(text: str) -> int | str:
    """``N`` or ``all`` (the seed's --interview_count / --domain_id)."""
    if text.strip().lower() == "all":
        return "all"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'all', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {value}")
    return value


def _int_at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a {what} integer, got {value}")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1, "positive")


def non_negative_int(text: str) -> int:
    return _int_at_least(text, 0, "non-negative")


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value
