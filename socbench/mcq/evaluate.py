"""Send a plan's requests to an engine: one ``loglikelihood`` call (CP, CP-UN) and one
``option_logprobs`` call (MCP and its circular variants), each request once however many
(item, k, variant) share it.

Any ``Engine`` works; wrapped in ``CachedEngine`` (as the flow does) every answer
is stored as it arrives, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import time

from socbench.engines.base import Engine, ResultSink
from socbench.types import LoglikelihoodRequest, McqAnswers, McqPlan, PromptRequest


def ask_engine(engine: Engine, plan: McqPlan, on_result: ResultSink | None = None,
               backend: dict[str, str] | None = None) -> McqAnswers:
    """All answers the plan needs; ``on_result`` as each arrives (the engines' sink, as for ISSP's
    prompts: one progress interface); ``backend`` is the recorded backend choice (``engines.choice``)."""
    ll_requests = loglikelihood_requests(plan)
    option_requests = option_requests_of(plan)
    start = time.perf_counter()
    lls = engine.loglikelihood(ll_requests, on_result=on_result) if ll_requests else []
    options = engine.option_logprobs(option_requests, on_result=on_result) if option_requests else []
    seconds = time.perf_counter() - start
    stats = getattr(engine, "stats", None)
    cache = {"hits": stats.hits, "misses": stats.misses} if stats is not None else {}
    return McqAnswers({r.key: a for r, a in zip(ll_requests, lls, strict=True)},
                      {r.key: a for r, a in zip(option_requests, options, strict=True)}, seconds,
                      dict(engine.identity), cache, dict(backend or {}))


def request_count(plan: McqPlan) -> int:
    """How many requests ``ask_engine`` sends (the progress bar's total)."""
    return len(loglikelihood_requests(plan)) + len(option_requests_of(plan))


def loglikelihood_requests(plan: McqPlan) -> list[LoglikelihoodRequest]:
    """Unique by key (CP-UN's requests are shared by every k)."""
    return list({r.key: r for p in plan.prompts for r in (*p.cp, *p.uncond)}.values())


def option_requests_of(plan: McqPlan) -> list[PromptRequest]:
    """Unique by key: an identity variant's request is the normal MCP request."""
    return list({p.mcp.key: p.mcp for p in (*plan.prompts, *plan.variants) if p.mcp is not None}.values())


def preload(engine: Engine, plan: McqPlan) -> bool:
    """Load the model now, unless the engine cache already holds every answer the plan needs.

    Why: ``socbench mcq`` calls this while Prefect's temporary API server starts in the
    background (6-13 s here), so the model loads while the server boots; a fully cached rerun
    still never loads the model.
    """
    missing = getattr(engine, "missing", None)
    if missing is not None and not (missing("loglikelihood", loglikelihood_requests(plan))
                                    or missing("option_logprobs", option_requests_of(plan))):
        return False
    load = getattr(getattr(engine, "backend", engine), "load", None)
    if load is None:
        return False
    load()
    return True
