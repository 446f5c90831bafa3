"""For whom does the model do well? Accuracy by country, country x domain and persona group,
each with its respondents, a CI (from ``MIN_RESPONDENTS`` respondents on) and the strongest
answer-free baseline *on the same items*.

Groups pool a run's items over its domains (item-weighted), so a respondent of one domain
is a cluster of its own in the bootstrap. The baselines are those of the domain (the majority
answer of the other respondents, overall or in the same country, or a uniform guess), scored
on each item of the group and averaged: a group's margin says whether the model beats what
an answer-free rule gets on exactly these people and questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.metrics.uncertainty import BOOTSTRAP_SEED, DEFAULT_RESAMPLES, accuracy_ci
from socbench.report.leaderboard import MIN_RESPONDENTS, NO_CI, ModelRun, pooled_items
from socbench.report.runs import ITEM_BASELINES


def group_row(frame: pd.DataFrame, *, with_ci: bool = True, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Respondents, items, accuracy [CI], strongest baseline and margin of one group of items."""
    respondents = int(frame["respondent"].nunique())
    accuracy = float(frame["correct"].mean())
    low, high = (accuracy_ci(frame["correct"], frame["respondent"], min_respondents=MIN_RESPONDENTS,
                             n_resamples=n_resamples, seed=seed) or NO_CI) if with_ci else NO_CI
    floors = {name: float(frame[name].mean()) for name in ITEM_BASELINES if frame[name].notna().all()}
    best = max(floors, key=lambda name: floors[name]) if floors else None
    floor = floors[best] if best else math.nan
    return {"respondents": respondents, "items": len(frame), "accuracy": accuracy, "accuracy_ci_low": low,
            "accuracy_ci_high": high, "best_baseline": best, "best_baseline_accuracy": floor,
            "margin_over_best_baseline": accuracy - floor, "enough": respondents >= MIN_RESPONDENTS}


def group_rows(frame: pd.DataFrame, keys: Sequence[str], **kwargs: Any) -> dict[tuple, dict[str, Any]]:
    """``group_row`` per value of ``keys``, in sorted order."""
    return {key if isinstance(key, tuple) else (key,): group_row(part, **kwargs)
            for key, part in frame.groupby(list(keys), sort=True)}


def country_rows(run: ModelRun, **kwargs: Any) -> dict[str, dict[str, Any]]:
    """Per country, pooled over domains; empty for a study without countries."""
    frame = pooled_items(run)
    if set(frame["country_code"]) <= {"unmapped"}:
        return {}
    return {key[0]: row for key, row in group_rows(frame, ["country_code"], **kwargs).items()}


def country_domain_cells(run: ModelRun) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (country, domain): accuracy, respondents and baseline (no CI: read the country table)."""
    frame = pooled_items(run)
    if set(frame["country_code"]) <= {"unmapped"}:
        return {}
    return {(country, domain): row for (country, domain), row in
            group_rows(frame, ["country_code", "domain"], with_ci=False).items()}


def persona_rows(run: ModelRun, **kwargs: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """``{attribute: {group: row}}`` for the persona attributes the run's files record."""
    frame = pooled_items(run)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for attribute in ATTRIBUTES:
        if attribute in frame.columns and (frame[attribute] != UNKNOWN).any():
            found[attribute] = {key[0]: row for key, row in
                                group_rows(frame.fillna({attribute: UNKNOWN}), [attribute], **kwargs).items()}
    return found
