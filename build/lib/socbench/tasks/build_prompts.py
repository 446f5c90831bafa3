"""Stage 3: every engine request of a unit, expansions (circular orders, repeated draws) included."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench import pipeline
from socbench.task import Prompts, Task, Unit


@task(name="build_prompts", cache_policy=NO_CACHE, persist_result=False)
def build_prompts(study: Task, unit: Unit, samples: Any) -> Prompts:
    return pipeline.prompts(study, unit, samples)
