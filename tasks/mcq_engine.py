"""MCQ stage 3: the engine's log-probabilities (the session's CachedEngine; retried).

Every answer is stored in the engine cache as it arrives, so a retry or a rerun sends
only what is still missing. Circular variants are in the plan's MCP call.
"""

from __future__ import annotations

import sys

from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from tqdm.auto import tqdm

from socbench.engines.session import get_engine
from socbench.mcq import McqConfig, ask_engine
from socbench.progress import Throttle
from socbench.types import McqAnswers, McqPlan


@task(name="mcq_engine", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=[5, 30])
def mcq_engine(plan: McqPlan, config: McqConfig) -> McqAnswers:
    artifact = create_progress_artifact(0.0, key="mcq-progress",
                                        description=f"{plan.dataset}: requests answered")
    bar = tqdm(desc=plan.dataset, unit="req", disable=not sys.stderr.isatty(), leave=False)
    throttle = Throttle(seconds=2.0)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(1)
        if throttle.ready() or done == total:
            update_progress_artifact(artifact, progress=100.0 * done / max(1, total))

    try:
        answers = ask_engine(get_engine(config.engine_settings()), plan, progress,
                             backend=config.backend_choice().record())
    finally:
        bar.close()
    get_run_logger().info("%s: %d loglikelihood + %d option requests in %.1f s; engine cache %s",
                          plan.dataset, len(answers.loglikelihoods), len(answers.options), answers.seconds,
                          answers.cache)
    return answers
