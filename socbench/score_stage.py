"""The ``score`` stage over an expanded run. Each request records the variant it shows, so extraction
and scoring never name an expansion: draws (``socbench.draws``) are reduced to one extraction per item
before scoring, circular variants (``socbench.circular``) to their metrics after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from socbench import verbalized
from socbench.circular import reduce_domain
from socbench.config import RunConfig
from socbench.draws import reduce_draws
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, ScoredDomain


def score_expanded(data: DomainData, items: Sequence[Item], extractions: Mapping[str, Extraction],
                   config: RunConfig) -> ScoredDomain:
    """Draws reduced, items scored, variants reduced; the draws' record joins the domain's metrics."""
    numeric = {item.item_id for item in items if item.numeric is not None}  # their median draw
    reduced, record = reduce_draws(extractions, config.samples, config.seed, numeric)
    scored = score_domain(data, items, reduced, model=config.engine.model, run=config.run_name,
                          interview_count=config.interview_count, include_persona=config.include_persona,
                          cache=config.engine.cache_dir)
    if config.mode == "verbalized":
        record |= verbalized.record(reduced, config.verbalized_answer, config.seed)
    if record:
        scored = replace(scored, result=replace(scored.result, metrics={**scored.result.metrics, **record}))
    return reduce_domain(scored, config.expansion)
