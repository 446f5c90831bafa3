"""Requests answered, as they arrive: the UI's progress artifact and the CLI's bar (``socbench.progress``)."""

from __future__ import annotations

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from socbench import progress
from socbench.progress import Throttle


class RequestProgress:
    """Counts answers; updates the artifact at most every 2 s (and at the end), the listeners at each."""

    def __init__(self, key: str, description: str, total: int | None = None) -> None:
        self.artifact = create_progress_artifact(0.0, key=key, description=description)
        self.total: int | None = None
        self.done = 0
        self.throttle = Throttle(seconds=2.0)
        if total is not None:
            self._start(total)

    def _start(self, total: int) -> None:
        self.total = total
        progress.requests(total)

    def step(self, total: int | None = None) -> None:
        """One more answer (``total``: how many there will be, when only known once answers come)."""
        if self.total is None and total is not None:
            self._start(total)
        self.done += 1
        progress.advance()
        if self.throttle.ready() or self.done == self.total:
            update_progress_artifact(self.artifact, progress=100.0 * self.done / max(1, self.total or 1))

    def close(self) -> None:
        update_progress_artifact(self.artifact, progress=100.0)
