"""Stage 2: each respondent's effective options (base overlaid with country overrides)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.data import build_items
from socbench.types import DomainData, Item


@task(name="country_special_options", cache_policy=NO_CACHE, persist_result=False)
def country_special_options(data: DomainData) -> list[Item]:
    """Items with effective options; unscoreable ones carry their exclusion reason."""
    return build_items(data)
