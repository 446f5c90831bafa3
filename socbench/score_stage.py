"""The ``score`` stage over an expanded run: the seam between the expansions and scoring.

An item is expanded once, when prompts are built, into several ordinary requests, each recording
the variant it shows (``PromptRequest.variant``), so extraction and scoring read every answer
against what its request displayed and never name an expansion. Scoring sees one extraction per
item: repeated draws (``socbench.draws``) are reduced to their modal extraction before it, and
circular variants (``socbench.circular``) are reduced to their metrics after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from socbench.circular import reduce_domain
from socbench.config import RunConfig
from socbench.draws import reduce_draws
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, ScoredDomain


def score_expanded(data: DomainData, items: Sequence[Item], extractions: Mapping[str, Extraction],
                   config: RunConfig) -> ScoredDomain:
    """Draws reduced to one extraction per item, the items scored, variants reduced; the draws'
    record (K, first seed, agreement, Fleiss' kappa) joins the domain's metrics."""
    reduced, record = reduce_draws(extractions, config.samples, config.seed)
    scored = score_domain(data, items, reduced, model=config.engine.model, run=config.run_name,
                          interview_count=config.interview_count, include_persona=config.include_persona,
                          cache=config.engine.cache_dir)
    if record:
        scored = replace(scored, result=replace(scored.result, metrics={**scored.result.metrics, **record}))
    return reduce_domain(scored, config.expansion)
