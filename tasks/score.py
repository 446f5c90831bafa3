"""Stage 6: scored items and the domain's counts, metrics and baselines (and circular variants)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.circular import VariantResult, circular_settings
from socbench.config import RunConfig
from socbench.scoring import score_domain
from socbench.scoring import score_variants as score_all_variants
from socbench.types import DomainData, DomainResult, Extraction, Item, ScoredItem


@task(name="score", cache_policy=NO_CACHE, persist_result=False)
def score(data: DomainData, items: list[Item], extractions: dict[str, Extraction],
          config: RunConfig) -> tuple[list[ScoredItem], DomainResult]:
    return score_domain(data, items, extractions, model=config.run_name, interview_count=config.interview_count,
                        circular=circular_settings(config))


@task(name="score_variants", cache_policy=NO_CACHE, persist_result=False)
def score_variants(items: list[Item], extractions: dict[str, Extraction],
                   config: RunConfig) -> list[VariantResult] | None:
    """Every circular variant's answer, for the report; None when circular evaluation is off."""
    settings = circular_settings(config)
    return None if settings is None else score_all_variants(items, extractions, settings)
