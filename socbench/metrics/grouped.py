"""Breakdowns by a key (per country, per persona group), in one place: ``group_row`` is the one row the result
files and the report show. A ``None`` key (an unmapped country) is reported under ``UNMAPPED``, never
dropped; ``pooled_rows`` pools a run's domains, each domain's respondents clusters of their own."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from socbench.metrics.baselines import UNMAPPED, best_baseline
from socbench.metrics.classification import accuracy, parse_failure_rate
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.uncertainty import accuracy_ci
from socbench.types import ScoredItem

Key = str | Callable[[ScoredItem], Hashable]


def split_index(items: Sequence[ScoredItem], key: Key) -> dict[str, list[int]]:
    """Item positions by group name, groups in sorted order (stable, diff-friendly output)."""
    getter = (lambda item: getattr(item, key)) if isinstance(key, str) else key
    groups: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        value = getter(item)
        groups[UNMAPPED if value is None else str(value)].append(i)
    return {name: groups[name] for name in sorted(groups)}


def group_row(group: Sequence[ScoredItem], floors: Mapping[str, float],
              clusters: Sequence[str] | None = None) -> dict[str, Any]:
    """One group: items ``n``, respondents, accuracy, parse failure rate, the baselines on its items
    (``floors``), the strongest and the margin over it; with ``clusters`` (each item's respondent)
    the accuracy's respondent-bootstrap CI too (NaN below ``DEFAULT_MIN_RESPONDENTS`` respondents)."""
    right, best = accuracy(group), best_baseline(floors)
    row = {"n": float(len(group)), "accuracy": right, "parse_failure_rate": parse_failure_rate(group),
           "respondents": len(set(clusters if clusters is not None else (i.person_id for i in group))),
           "baselines": dict(floors), "best_baseline": best[0] if best else None,
           "best_baseline_accuracy": best[1] if best else math.nan,
           "margin_over_best_baseline": right - best[1] if best else math.nan}
    if clusters is not None:
        ci = accuracy_ci([i.correct for i in group], clusters, min_respondents=DEFAULT_MIN_RESPONDENTS)
        row["accuracy_ci_low"], row["accuracy_ci_high"] = ci or (math.nan, math.nan)
    return row


def group_rows(items: Sequence[ScoredItem], key: Key,
               expected: Mapping[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """``group_row`` per group of one domain; ``expected``: each baseline's per-item expectation."""
    return {name: group_row([items[i] for i in index],
                            {b: float(v[index].mean()) for b, v in expected.items()})
            for name, index in split_index(items, key).items()}


def pooled_rows(domains: Sequence[tuple[str, Sequence[ScoredItem], Mapping[str, Mapping[str, Any]],
                                        Mapping[str, float]]], key: Key) -> dict[str, dict[str, Any]]:
    """Groups pooled over domains, each ``(name, items, its group_rows, its baselines)``: a group's
    baselines are its domains' item-weighted (a domain without the group's row gives its own), its
    respondents ``<domain>:<person id>``, and its accuracy gets a CI."""
    parts: dict[str, list[tuple[str, list[ScoredItem], Mapping[str, float]]]] = defaultdict(list)
    for domain, items, rows, floors in domains:
        for name, index in split_index(items, key).items():
            own = rows[name]["baselines"] if name in rows else floors
            parts[name].append((domain, [items[i] for i in index], own))
    pooled = {}
    for name in sorted(parts):
        found = parts[name]
        group = [item for _, items, _ in found for item in items]
        common = [b for b in found[0][2] if all(b in f for _, _, f in found)]  # groupings may differ
        floors = {b: sum(f[b] * len(items) for _, items, f in found) / len(group) for b in common}
        clusters = [f"{d}:{i.person_id}" for d, items, _ in found for i in items]
        pooled[name] = group_row(group, floors, clusters)
    return pooled
