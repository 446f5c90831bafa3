"""MCQ stage 2: CP/CP-UN loglikelihood requests and MCP option requests per item and k;
with ``--circular``, the MCP requests of every reordering of each item's options."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench.mcq import McqConfig, McqData, McqPlan, build_plan
from socbench.mcq.circular import CircularPlan, build_circular_plan


@task(name="mcq_prompts", cache_policy=NO_CACHE, persist_result=False)
def mcq_prompts(data: McqData, config: McqConfig) -> McqPlan:
    return build_plan(data, config.method, config.k_shot, config.tolerance, config.seed)


@task(name="mcq_circular_prompts", cache_policy=NO_CACHE, persist_result=False)
def mcq_circular_prompts(data: McqData, plan: McqPlan, config: McqConfig) -> CircularPlan:
    circular = build_circular_plan(data, plan, config.circular_settings())
    for note in circular.notes:
        get_run_logger().info(note)
    return circular
