"""Stage 5: what each answer says (ISSP: the code it names, or a counted parse failure)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.task import Prompts, Task


@task(name="extract", cache_policy=NO_CACHE, persist_result=False)
def extract(study: Task, prompts: Prompts, answers: Any) -> Any:
    return study.extract(prompts, answers)
