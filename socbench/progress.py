"""A tiny rate limiter for progress updates (UI artifacts should not be updated per request)."""

from __future__ import annotations

import time


class Throttle:
    """``ready()`` is True at most once per ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = 0.0

    def ready(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.seconds:
            self._last = now
            return True
        return False
