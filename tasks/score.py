"""Stage 6: scored items, the domain's counts, metrics and baselines, and circular variants."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.circular import circular_settings
from socbench.config import RunConfig
from socbench.scoring import score_domain, score_variants
from socbench.types import DomainData, Extraction, Item, ScoredDomain


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(data: DomainData, items: list[Item], extractions: dict[str, Extraction],
          config: RunConfig) -> ScoredDomain:
    """Everything the report needs; ``variants`` is None when circular evaluation is off."""
    circular = circular_settings(config)
    scored, result = score_domain(data, items, extractions, model=config.run_name,
                                  interview_count=config.interview_count, circular=circular)
    variants = None if circular is None else score_variants(items, extractions, circular)
    return ScoredDomain(scored, result, variants)
