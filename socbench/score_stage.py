"""The ``score`` stage over an expanded run: the seam between the expansions and scoring.

Why: scoring sees one extraction per item and never names an expansion; repeated draws are
reduced to their modal extraction before it (``socbench.draws``) and circular variants after it
(``socbench.circular``), both through ``socbench.expansion``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from socbench.config import RunConfig
from socbench.expansion import reduce_draws, reduce_scored
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
    return reduce_scored(scored, config.expansion)
