"""Stage 2: the options each sample shows (ISSP: base options overlaid with the country's own)."""

from __future__ import annotations

from typing import Any

from socbench import pipeline
from socbench.task import Task, Unit
from socbench.tasks import stage


@stage
def country_special_options(study: Task, unit: Unit, data: Any) -> Any:
    return pipeline.special_options(study, unit, data)
