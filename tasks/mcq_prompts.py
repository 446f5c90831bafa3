"""MCQ stage 2: CP/CP-UN loglikelihood requests and MCP option requests per item and k."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.mcq import McqConfig, McqData, McqPlan, build_plan


@task(name="mcq_prompts", cache_policy=NO_CACHE, persist_result=False)
def mcq_prompts(data: McqData, config: McqConfig) -> McqPlan:
    return build_plan(data, config.method, config.k_shot, config.tolerance, config.seed)
