"""Requests answered, as they arrive: the UI's progress artifact and the CLI's bar (``socbench.progress``)."""

from __future__ import annotations

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from socbench import progress
from socbench.progress import Throttle


class RequestProgress:
    """Counts answers; updates the artifact at most every 2 s (and at the end), the listeners at each."""

    def __init__(self, key: str, description: str, total: int) -> None:
        self.artifact = create_progress_artifact(0.0, key=key, description=description)
        self.total = total
        self.done = 0
        self.throttle = Throttle(seconds=2.0)
        progress.requests(total)

    def __call__(self, index: int, result: object) -> None:
        """One more answer: the engines' ``on_result`` sink, for ISSP's prompts and MCQ's plan alike."""
        self.done += 1
        progress.advance()
        if self.throttle.ready() or self.done == self.total:
            update_progress_artifact(self.artifact, progress=100.0 * self.done / max(1, self.total))

    def close(self) -> None:
        update_progress_artifact(self.artifact, progress=100.0)
