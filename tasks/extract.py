"""Stage 5: the code each answer names, or a counted parse failure."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.extract import extract_all
from socbench.types import EngineResult, Extraction, PromptRequest


@task(name="extract", cache_policy=NO_CACHE, persist_result=False)
def extract(prompts: list[PromptRequest], results: list[EngineResult]) -> dict[str, Extraction]:
    """Extractions keyed by request id (each request carries the option labels it showed)."""
    return extract_all(prompts, results)
