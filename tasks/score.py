"""Stage 6: scored items, the domain's counts, metrics and baselines (and reduced variants or draws)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.config import RunConfig
from socbench.score_stage import score_expanded
from socbench.types import DomainData, Extraction, Item, ScoredDomain


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(data: DomainData, items: list[Item], extractions: dict[str, Extraction],
          config: RunConfig) -> ScoredDomain:
    return score_expanded(data, items, extractions, config)
