"""Stage 4: answers from the engine, each stored in the engine cache as it finishes; retried.

Named as on the design card; any backend works (vLLM, OpenAI-compatible, transformers).
The engine cache (``socbench/engines/cache.py``) is the only answer cache: a rerun or a
retry asks it first and sends exactly the requests without an answer (failed ones
included), so this task keeps no result of its own.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench.config import RunConfig
from socbench.engines.session import get_engine, run_prompts
from socbench.types import EngineResult, PromptRequest
from tasks.progress import RequestProgress


@task(name="vllm_generate", cache_policy=NO_CACHE, persist_result=False, retries=2,
      retry_delay_seconds=[5, 30])
def vllm_generate(prompts: list[PromptRequest], config: RunConfig, domain_id: int) -> list[EngineResult]:
    engine = get_engine(config.engine_settings())
    answered = RequestProgress(f"issp-progress-domain-{domain_id}",
                               f"ISSP domain {domain_id}: requests answered", total=len(prompts))
    results = run_prompts(engine, prompts, on_result=answered)
    answered.close()
    failed = sum(1 for r in results if r.error is not None)
    cached = sum(1 for r in results if r.cached)
    get_run_logger().info("domain %s: %d prompts, %d from the engine cache, %d sent, %d failed",
                          domain_id, len(prompts), cached, len(prompts) - cached, failed)
    return results
