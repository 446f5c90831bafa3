"""Stage 3: every engine request of a unit, expansions (circular orders, repeated draws) included."""

from __future__ import annotations

from typing import Any

from socbench import pipeline
from socbench.task import Prompts, Task, Unit
from socbench.tasks import stage


@stage
def build_prompts(study: Task, unit: Unit, samples: Any) -> Prompts:
    return pipeline.prompts(study, unit, samples)
