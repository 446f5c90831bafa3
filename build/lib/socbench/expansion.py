"""An item asked as several ordinary requests, and the reducer over their scored answers: the
one seam the pipeline calls, so a new expansion (repeated draws per item) slots in here without
touching extraction or scoring.

Expansion happens once, when prompts are built: each extra request records the variant it
shows (``PromptRequest.variant``, as Inspect's ``Choice.original_position`` records where an
option came from); scoring reads each answer against the labels its request displayed. The
reducer turns the scored variants, grouped by item, into the expansion's metrics. Two
expansions: circular evaluation (``socbench.circular``: variants) and repeated draws
(``socbench.draws``: ``--samples K``, reduced to one modal extraction per item before scoring).
"""

from __future__ import annotations

from socbench.circular import issp_variants as item_variants
from socbench.draws import draw_prompts, reduce_draws
from socbench.metrics.circular import reduce_domain as reduce_scored
from socbench.types import CircularSettings

Expansion = CircularSettings  # a run's expansion settings (``RunConfig.expansion``)

__all__ = ["Expansion", "draw_prompts", "item_variants", "reduce_draws", "reduce_scored"]
