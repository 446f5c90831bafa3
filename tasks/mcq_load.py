"""MCQ stage 1: the items to evaluate and the few-shot pool (another split)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench import progress
from socbench.mcq import McqConfig, load_mcq
from socbench.types import McqData


@task(name="mcq_load", cache_policy=NO_CACHE, persist_result=False)
def mcq_load(config: McqConfig) -> McqData:
    data = load_mcq(config.dataset, limit=config.limit, fewshot=max(config.k_shot) > 0)
    progress.begin(f"{data.dataset} ({config.engine.model})")
    return data
