"""Stage 6: scored items and the domain's counts, metrics and baselines."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.config import RunConfig
from socbench.scoring import score_domain
from socbench.types import DomainData, DomainResult, Extraction, Item, ScoredItem


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(data: DomainData, items: list[Item], extractions: dict[str, Extraction],
          config: RunConfig) -> tuple[list[ScoredItem], DomainResult]:
    return score_domain(data, items, extractions, model=config.model, interview_count=config.interview_count)
