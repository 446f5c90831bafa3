"""Stage 5: the code each answer names, or a counted parse failure."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.circular import run_circular_settings
from socbench.config import RunConfig
from socbench.extract import extract_all
from socbench.types import EngineResult, Extraction, Item, PromptRequest


@task(name="extract", cache_policy=NO_CACHE, persist_result=False)
def extract(prompts: list[PromptRequest], results: list[EngineResult], items: list[Item],
            config: RunConfig | None = None) -> dict[str, Extraction]:
    """Extractions keyed by item id (items, and circular variants, give the labels an answer may name)."""
    return extract_all(prompts, results, items, run_circular_settings(config) if config else None)
