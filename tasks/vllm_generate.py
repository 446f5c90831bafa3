"""Stage 4, the engine's answers, for ISSP's prompts and an MCQ plan alike: each answer stored in the
engine cache as it finishes; retried.

Named as on the design card (``vllm_generate``; the MCQ flow runs it as ``mcq_engine``); any backend
works (vLLM, OpenAI-compatible, transformers). The engine cache (``socbench/engines/cache.py``) is the
only answer cache: a rerun or a retry asks it first and sends exactly the requests without an answer
(failed ones included), so this task keeps no result of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench.engines.session import get_engine, run_prompts
from socbench.tasks.progress import RequestProgress

Work = TypeVar("Work")
Answers = TypeVar("Answers")


@task(name="vllm_generate", cache_policy=NO_CACHE, persist_result=False, retries=2,
      retry_delay_seconds=[5, 30])
def vllm_generate(work: Work, config: Any, key: str, label: str,
                  ask: Callable[..., Answers] = run_prompts, count: Callable[[Work], int] = len) -> Answers:
    """``ask(engine, work, on_result=...)`` on the session's engine for ``config.engine_settings()``
    (ISSP: ``run_prompts`` over the prompts; MCQ: ``ask_engine`` over the plan, ``count`` its
    requests); every answer counted on the UI's progress artifact ``key`` and the CLI's bar."""
    engine = get_engine(config.engine_settings())
    total = count(work)
    answered = RequestProgress(key, f"{label}: requests answered", total)
    answers = ask(engine, work, on_result=answered)
    answered.close()
    stats = getattr(engine, "stats", None)
    cached = f"{stats.hits} from the engine cache, {stats.misses} sent" if stats is not None else "no cache"
    get_run_logger().info("%s: %d requests, %s", label, total, cached)
    return answers
