"""Stage 5: what each answer says (ISSP: the code it names, or a counted parse failure)."""

from __future__ import annotations

from typing import Any

from socbench.task import Prompts, Task
from socbench.tasks import stage


@stage
def extract(study: Task, prompts: Prompts, answers: Any) -> Any:
    return study.extract(prompts, answers)
