"""The one ``Engine`` protocol every backend implements (lm-eval's ``LM`` shape): a list in, a
same-length list out in the same order. Caching lives once in ``CachedEngine`` (``cache.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, PromptRequest

ResultSink = Callable[[int, object], None]
"""Called by a backend, from the calling thread, as each request finishes: ``(index, result)``;
``CachedEngine``'s stores the result at once, so a killed run keeps every finished request."""


@runtime_checkable
class Engine(Protocol):
    @property
    def identity(self) -> dict[str, str]:
        """What changes the answers (backend, model, dtype...): folded into every cache key, so
        never secrets, URLs' keys or concurrency."""

    def generate(self, requests: Sequence[PromptRequest],
                 on_result: ResultSink | None = None) -> list[EngineResult]:
        """Chat (or raw) completion, constrained to ``{"answer": code}`` when ``structured``."""

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        """Log-probability of each offered code after ``answer_prefix``: one pass, no decoding."""

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        """Sum of log-probs of ``continuation`` given ``context`` (cloze scoring)."""

    def close(self) -> None:
        """Release the model; idempotent and safe after a failure."""
