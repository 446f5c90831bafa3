"""Stage 4: answers from the engine, each stored in the engine cache as it finishes; retried.

Named as on the design card; any backend works (vLLM, OpenAI-compatible, transformers).
The engine cache (``socbench/engines/cache.py``) is the only answer cache: a rerun or a
retry asks it first and sends exactly the requests without an answer (failed ones
included), so this task keeps no result of its own.
"""

from __future__ import annotations

import sys

from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from tqdm.auto import tqdm

from socbench.config import RunConfig
from socbench.engines.session import get_engine, run_prompts
from socbench.progress import Throttle
from socbench.types import EngineResult, PromptRequest


@task(name="vllm_generate", cache_policy=NO_CACHE, persist_result=False, retries=2,
      retry_delay_seconds=[5, 30])
def vllm_generate(prompts: list[PromptRequest], config: RunConfig, domain_id: int) -> list[EngineResult]:
    engine = get_engine(config.engine_settings())
    artifact = create_progress_artifact(0.0, key=f"issp-progress-domain-{domain_id}",
                                        description=f"ISSP domain {domain_id}: requests answered")
    bar = tqdm(total=len(prompts), desc=f"domain {domain_id}", unit="prompt",
               disable=not sys.stderr.isatty(), leave=False)
    throttle = Throttle(seconds=2.0)
    done = 0

    def on_result(index: int, result: object) -> None:
        nonlocal done
        done += 1
        bar.update(1)
        if throttle.ready() or done == len(prompts):
            update_progress_artifact(artifact, progress=100.0 * done / max(1, len(prompts)))

    try:
        results = run_prompts(engine, prompts, on_result=on_result)
    finally:
        bar.close()
    update_progress_artifact(artifact, progress=100.0)
    failed = sum(1 for r in results if r.error is not None)
    cached = sum(1 for r in results if r.cached)
    get_run_logger().info("domain %s: %d prompts, %d from the engine cache, %d sent, %d failed",
                          domain_id, len(prompts), cached, len(prompts) - cached, failed)
    return results
