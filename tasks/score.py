"""Stage 6: scored items, the domain's counts, metrics and baselines (and reduced variants)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.config import RunConfig
from socbench.expansion import reduce_scored
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, ScoredDomain


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(data: DomainData, items: list[Item], extractions: dict[str, Extraction],
          config: RunConfig) -> ScoredDomain:
    scored = score_domain(data, items, extractions, model=config.engine.model, run=config.run_name,
                          interview_count=config.interview_count, include_persona=config.include_persona)
    return reduce_scored(scored, config.expansion)
