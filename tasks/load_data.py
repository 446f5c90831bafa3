"""Stage 1: a unit's samples (an ISSP domain's respondents and questions, an MCQ dataset)."""

from __future__ import annotations

from typing import Any

from socbench import pipeline, progress
from socbench.task import Task, Unit
from socbench.tasks import stage


@stage
def load_data(study: Task, unit: Unit) -> Any:
    progress.begin(unit.label)
    data = pipeline.load(study, unit)
    for line in study.notes(data):
        progress.note(line)
    return data
