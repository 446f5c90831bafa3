"""Stage 4, the engine's answers to a unit's requests (any backend: vLLM, OpenAI-compatible, transformers),
each stored in the engine cache as it finishes; retried.

Named as on the design card. The engine cache (``socbench/engines/cache.py``) is the only answer cache: a
rerun or a retry asks it first and sends exactly the requests without an answer (failed ones included),
so this task keeps no result of its own.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench import pipeline
from socbench.engines.session import get_engine
from socbench.engines.settings import EngineSettings
from socbench.task import Prompts
from socbench.tasks.progress import RequestProgress
from socbench.types import Answers


@task(name="vllm_generate", cache_policy=NO_CACHE, persist_result=False, retries=2,
      retry_delay_seconds=[5, 30])
def vllm_generate(prompts: Prompts, settings: EngineSettings, key: str, label: str) -> Answers:
    """Every request answered on the session's engine for ``settings``; each answer counted on the
    UI's progress artifact ``key`` and the CLI's bar."""
    engine = get_engine(settings)
    total = pipeline.request_count(prompts.requests)
    answered = RequestProgress(key, f"{label}: requests answered", total)
    answers = pipeline.answer(engine, prompts.requests, on_result=answered)
    answered.close()
    cache = answers.cache
    said = f"{cache['hits']} from the engine cache, {cache['misses']} sent" if cache else "no cache"
    get_run_logger().info("%s: %d requests, %s", label, total, said)
    return answers
