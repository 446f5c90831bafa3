"""MCQ stage 3: the engine's log-probabilities (the session's CachedEngine; retried).

Every answer is stored in the engine cache as it arrives, so a retry or a rerun sends
only what is still missing. Circular variants are in the plan's MCP call.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench import progress
from socbench.engines.session import get_engine
from socbench.mcq import McqConfig, ask_engine, request_count
from socbench.types import McqAnswers, McqPlan
from tasks.progress import RequestProgress


@task(name="mcq_engine", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=[5, 30])
def mcq_engine(plan: McqPlan, config: McqConfig) -> McqAnswers:
    progress.begin(f"{plan.dataset} ({config.engine.model})")
    answered = RequestProgress("mcq-progress", f"{plan.dataset}: requests answered", request_count(plan))
    answers = ask_engine(get_engine(config.engine_settings()), plan, answered,
                         backend=config.backend_choice().record())
    answered.close()
    get_run_logger().info("%s: %d loglikelihood + %d option requests in %.1f s; engine cache %s",
                          plan.dataset, len(answers.loglikelihoods), len(answers.options), answers.seconds,
                          answers.cache)
    return answers
