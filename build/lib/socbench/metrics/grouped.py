"""Breakdowns of any metric by a key (Inspect's ``grouped`` metric idea), in one place.

``grouped(accuracy, "country_code")(items)`` gives ``{"DE": 0.41, "JP": 0.38, ...}``.
Group names are strings (they become JSON keys); a ``None`` key, such as an unmapped
country, is reported under ``UNMAPPED`` rather than dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence

from socbench.types import ScoredItem

Metric = Callable[[Sequence[ScoredItem]], float]
Key = str | Callable[[ScoredItem], Hashable]

UNMAPPED = "unmapped"


def _key_function(key: Key) -> Callable[[ScoredItem], str]:
    getter = (lambda item: getattr(item, key)) if isinstance(key, str) else key

    def group_name(item: ScoredItem) -> str:
        value = getter(item)
        return UNMAPPED if value is None else str(value)

    return group_name


def split(items: Sequence[ScoredItem], key: Key) -> dict[str, list[ScoredItem]]:
    """Items by group name, groups in sorted order (stable, diff-friendly output)."""
    name_of = _key_function(key)
    groups: dict[str, list[ScoredItem]] = defaultdict(list)
    for item in items:
        groups[name_of(item)].append(item)
    return {name: groups[name] for name in sorted(groups)}


def grouped(metric: Metric, key: Key) -> Callable[[Sequence[ScoredItem]], dict[str, float]]:
    """Wrap ``metric`` so it returns ``{group: metric(items of that group)}``.

    ``key`` is a ScoredItem attribute name (``"country_code"``) or a function of an item.
    """

    def by_group(items: Sequence[ScoredItem]) -> dict[str, float]:
        return {name: metric(group) for name, group in split(items, key).items()}

    return by_group


def breakdown(metrics: Mapping[str, Metric], key: Key,
              items: Sequence[ScoredItem]) -> dict[str, dict[str, float]]:
    """Several metrics per group: ``{group: {metric name: value}}`` (per-country tables)."""
    return {
        name: {metric_name: metric(group) for metric_name, metric in metrics.items()}
        for name, group in split(items, key).items()
    }
