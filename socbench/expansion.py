"""An item asked as several ordinary requests, and the reducer over their scored answers.

Expansion happens once, when prompts are built: each extra request records the variant it
shows (``PromptRequest.variant``, as Inspect's ``Choice.original_position`` records where an
option came from). Extraction passes that record on and scoring reads each answer against the
labels its request displayed, neither knowing why there are several. The reducer then turns
the scored variants, grouped by item, into the expansion's metrics. Circular evaluation
(``socbench.circular``) is the one expansion today; repeated draws per item would add their
settings type here with their own ``item_variants`` and ``reduce`` branch.
"""

from __future__ import annotations

from socbench import circular
from socbench.metrics.circular import reduce_domain
from socbench.types import CircularSettings, Item, ScoredDomain, Variant

Expansion = CircularSettings  # a run's expansion settings (``RunConfig.expansion``)


def item_variants(item: Item, expansion: Expansion) -> list[Variant]:
    """The variants one scoreable ISSP item is asked as."""
    return circular.issp_variants(item, expansion)


def reduce_scored(scored: ScoredDomain, expansion: Expansion | None) -> ScoredDomain:
    """``scored`` with its expansion's metrics (an incomplete domain, or none, is returned as is)."""
    if expansion is None or scored.variants is None or not scored.result.complete:
        return scored
    return reduce_domain(scored, expansion)
