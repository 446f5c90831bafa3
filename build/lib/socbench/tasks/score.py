"""Stage 6: a unit's scored items, counts, metrics and baselines (and reduced variants or draws)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.task import Prompts, Task


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(study: Task, samples: Any, prompts: Prompts, extracted: Any) -> Any:
    return study.score(samples, prompts, extracted)
