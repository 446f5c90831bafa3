"""Waiting on a condition with a deadline, never for a fixed time (tests must pass under load)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout_s: float, poll_s: float = 0.05) -> T:
    """``predicate()``'s first truthy value, or its last value at the deadline: the caller asserts it."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return value
