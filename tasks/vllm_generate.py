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
from socbench.engines.session import get_engine, run_prompts
from socbench.progress import Throttle
from socbench.types import EngineResult, PromptRequest


def _cache_key(context: TaskRunContext, params: dict[str, Any]) -> str:
    """Domain, settings that change answers, engine identity and the prompts themselves."""
    config: RunConfig = params["config"]
    digest = hashlib.sha256()
    for prompt in params["prompts"]:
        digest.update(prompt.key.encode())
    identity = sorted(get_engine(config).identity.items())
    return f"vllm_generate-{params['domain_id']}-{config.fingerprint()}-{hashlib.sha256(str(identity).encode()).hexdigest()[:12]}-{digest.hexdigest()[:24]}"


@task(name="vllm_generate", cache_key_fn=_cache_key, persist_result=True, retries=2, retry_delay_seconds=[5, 30])
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
    stats = getattr(engine, "stats", None)
    if stats is not None:
        get_run_logger().info("domain %s: %d prompts; engine cache %s", domain_id, len(prompts), stats)
    return results
