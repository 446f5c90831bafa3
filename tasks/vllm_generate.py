"""Stage 4: answers from the engine — cached per request and per task, retried.

Named as on the design card; any backend works (vLLM, OpenAI-compatible, transformers).
Two caches: the engine cache stores each request as it finishes (a kill loses little),
and this task's persisted result makes a rerun with the same prompts a single lookup.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.context import TaskRunContext
from tqdm.auto import tqdm

from socbench.config import RunConfig
from socbench.engines.session import get_engine, prompt_method, run_prompts
from socbench.progress import Throttle
from socbench.types import EngineResult, PromptRequest


def _cache_key(context: TaskRunContext, params: dict[str, Any]) -> str:
    """Domain, settings that change answers, engine identity, the prompts, the engine cache's
    folder — and how many of the prompts that cache lacks, so a run that ended with failed
    requests is never a hit: the next run retries exactly those."""
    config: RunConfig = params["config"]
    prompts: list[PromptRequest] = params["prompts"]
    digest = hashlib.sha256()
    for prompt in prompts:
        digest.update(prompt.key.encode())
    engine = get_engine(config)
    identity = hashlib.sha256(str(sorted(engine.identity.items())).encode()).hexdigest()[:12]
    missing = engine.missing(prompt_method(prompts), prompts) if hasattr(engine, "missing") else len(prompts)
    digest.update(str(config.engine_cache_dir.resolve()).encode())  # each output dir keeps its own answers
    return (f"vllm_generate-{params['domain_id']}-{config.fingerprint()}-{identity}"
            f"-{digest.hexdigest()[:24]}-{missing}")


@task(name="vllm_generate", cache_key_fn=_cache_key, persist_result=True, retries=2,
      retry_delay_seconds=[5, 30])
def vllm_generate(prompts: list[PromptRequest], config: RunConfig, domain_id: int) -> list[EngineResult]:
    engine = get_engine(config)
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
