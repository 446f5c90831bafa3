"""Stage 6: a unit's scored items, counts, metrics and baselines (and reduced variants or draws)."""

from __future__ import annotations

from typing import Any

from socbench.task import Task
from socbench.tasks import stage


@stage
def score(study: Task, samples: Any, plan: Any, extracted: Any) -> Any:
    return study.score(samples, plan, extracted)
