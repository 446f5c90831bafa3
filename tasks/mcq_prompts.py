"""MCQ stage 2: CP/CP-UN loglikelihood requests and MCP option requests per item and k;
with ``--circular``, also the MCP requests of every reordering of each item's options."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from socbench.mcq import McqConfig, build_plan
from socbench.mcq.circular import circular_notes
from socbench.types import McqData, McqPlan


@task(name="mcq_prompts", cache_policy=NO_CACHE, persist_result=False)
def mcq_prompts(data: McqData, config: McqConfig) -> McqPlan:
    plan = build_plan(data, config.method, config.k_shot, config.tolerance, config.seed,
                      config.expansion)
    for note in circular_notes(plan.methods) if plan.circular_settings is not None else ():
        get_run_logger().info(note)
    return plan
