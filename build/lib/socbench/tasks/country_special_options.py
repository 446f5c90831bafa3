"""Stage 2: the options each sample shows (ISSP: base options overlaid with the country's own)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench import pipeline
from socbench.task import Task, Unit


@task(name="country_special_options", cache_policy=NO_CACHE, persist_result=False)
def country_special_options(study: Task, unit: Unit, data: Any) -> Any:
    return pipeline.special_options(study, unit, data)
