"""Stage 3: prompts for the scoreable items, grouped by respondent for prefix sharing."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.config import RunConfig
from socbench.prompts import build_domain_prompts
from socbench.types import DomainData, Item, PromptRequest


@task(name="build_prompts", cache_policy=NO_CACHE, persist_result=False)
def build_prompts(data: DomainData, items: list[Item], config: RunConfig) -> list[PromptRequest]:
    return build_domain_prompts(data, items, config)
