"""Send a plan's requests to an engine: one ``loglikelihood`` call (CP, CP-UN) and one
``option_logprobs`` call (MCP), each request once however many (item, k) share it.

``extra_options`` (circular evaluation's variant requests) join the MCP call, deduplicated
by key. Any ``Engine`` works; wrapped in ``CachedEngine`` (as the flow does) every answer
is stored as it arrives, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from socbench.engines.base import Engine
from socbench.mcq.prompts import McqPlan
from socbench.types import EngineResult, LoglikelihoodResult, PromptRequest

Progress = Callable[[int, int], None]  # (answered so far, total)


@dataclass(frozen=True)
class McqAnswers:
    """The engine's answers by request key, and what it cost."""

    loglikelihoods: dict[str, LoglikelihoodResult]
    options: dict[str, EngineResult]
    seconds: float
    identity: dict[str, str] = field(default_factory=dict)  # the engine's (backend, model, dtype...)
    cache: dict[str, int] = field(default_factory=dict)  # CachedEngine's hits/misses, if any
    backend: dict[str, str] = field(default_factory=dict)  # engines.choice: requested, chosen, why

    @property
    def option_errors(self) -> dict[str, str]:
        return {key: r.error for key, r in self.options.items() if r.error is not None}


def ask_engine(engine: Engine, plan: McqPlan, progress: Progress | None = None,
               extra_options: Sequence[PromptRequest] = (), backend: dict[str, str] | None = None) -> McqAnswers:
    """All answers the plan (and ``extra_options``) need; ``progress(done, total)`` as each arrives."""
    ll_requests = plan.loglikelihood_requests()
    option_requests = list({r.key: r for r in (*plan.option_requests(), *extra_options)}.values())
    total = len(ll_requests) + len(option_requests)
    done = 0

    def on_result(index: int, result: object) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    start = time.perf_counter()
    lls = engine.loglikelihood(ll_requests, on_result=on_result) if ll_requests else []
    options = engine.option_logprobs(option_requests, on_result=on_result) if option_requests else []
    seconds = time.perf_counter() - start
    stats = getattr(engine, "stats", None)
    cache = {"hits": stats.hits, "misses": stats.misses} if stats is not None else {}
    return McqAnswers({r.key: a for r, a in zip(ll_requests, lls, strict=True)},
                      {r.key: a for r, a in zip(option_requests, options, strict=True)}, seconds,
                      dict(engine.identity), cache, dict(backend or {}))


def preload(engine: Engine, plan: McqPlan) -> bool:
    """Load the model now, unless the engine cache already holds every answer the plan needs.

    Why: ``socbench mcq`` calls this while Prefect's temporary API server starts in the
    background (6-13 s here), so the model loads while the server boots; a fully cached rerun
    still never loads the model.
    """
    missing = getattr(engine, "missing", None)
    if missing is not None and not (missing("loglikelihood", plan.loglikelihood_requests())
                                    or missing("option_logprobs", plan.option_requests())):
        return False
    load = getattr(getattr(engine, "backend", engine), "load", None)
    if load is None:
        return False
    load()
    return True
