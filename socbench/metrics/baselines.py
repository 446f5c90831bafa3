"""Answer-free baselines on exactly the scored items, so a model's accuracy has a floor: ``uniform``
(expected ``mean(1/k)``) and the majority answer to the question, overall or in the respondent's
country (``majority_group_question`` for another grouping variable), leave-one-respondent-out so an answer
never predicts itself; ``_weighted`` ones guess the population's mode from the design weights. Tied modes
split evenly (``1/t``: no bias to low codes, still deterministic); an item whose group has no other
respondent falls back to ``1/k``; a ``None`` country is a group of its own."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from socbench.types import COUNTRY, ScoredItem

UNMAPPED = "unmapped"  # the group of an item without a country (or any key): reported, never dropped
BY_QUESTION = ("question_id",)
BY_COUNTRY_QUESTION = ("country_code", "question_id")  # the items' country_code holds their group


def group_baseline(grouping: str = COUNTRY) -> str:
    """The name of the majority answer in the respondent's group: country, or the study's grouping."""
    return "majority_country_question" if grouping == COUNTRY else "majority_group_question"


def majority_item_scores(items: Sequence[ScoredItem], by: Sequence[str] = BY_QUESTION) -> np.ndarray:
    """Per-item expected accuracy of the leave-one-out majority guess (``items`` order). Vectorised:
    leaving the item out lowers only its own code's count, so its code wins iff it was the unique top
    count ``m1`` and ``m1 - 1`` still beats the runner-up ``m2`` (a tie: 1 / (1 + codes at m2))."""
    keys = list(by)
    frame = _frame(items, keys)
    counts = frame.groupby(keys + ["code"]).size().rename("c").reset_index()
    stats = _top_two(counts, keys)
    joined = frame.join(counts.set_index(keys + ["code"])["c"], on=keys + ["code"]).join(stats, on=keys)
    c, m2 = joined["c"].to_numpy(), joined["m2"].to_numpy()
    unique_top = (c == joined["m1"].to_numpy()) & (joined["n_m1"].to_numpy() == 1)
    score = np.where(unique_top & (c - 1 > m2), 1.0, 0.0)
    score = np.where(unique_top & (c - 1 == m2), 1.0 / (1.0 + joined["n_m2"].to_numpy()), score)
    return np.where(joined["n"].to_numpy() == 1, 1.0 / joined["k"].to_numpy(), score)


def _top_two(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group: items ``n``, top count ``m1`` and its number of codes ``n_m1``, runner-up
    count ``m2`` (0 when every item has one code) and its number of codes ``n_m2``."""
    rank = counts.groupby(keys)["c"].rank(method="dense", ascending=False)
    counts = counts.assign(r1=rank == 1, r2=rank == 2, c2=counts["c"].where(rank == 2, 0))
    return counts.groupby(keys).agg(
        n=("c", "sum"), m1=("c", "max"), n_m1=("r1", "sum"), m2=("c2", "max"), n_m2=("r2", "sum")
    )


def weighted_majority_item_scores(items: Sequence[ScoredItem], weights: Mapping[int, float],
                                  by: Sequence[str] = BY_QUESTION) -> np.ndarray:
    """Per-item expected accuracy of the leave-one-out *weighted* majority guess: leaving the item out
    lowers its code's total weight by its weight, then as ``majority_item_scores``; totals are rounded to
    9 decimals so equal weights tie exactly."""
    keys = list(by)
    frame = _frame(items, keys)
    frame["w"] = [float(weights[item.person_id]) for item in items]
    totals = frame.groupby(keys + ["code"])["w"].sum().round(9).rename("own").reset_index()
    stats = _top_two(totals.rename(columns={"own": "c"}), keys)
    joined = frame.join(totals.set_index(keys + ["code"])["own"], on=keys + ["code"]).join(stats, on=keys)
    joined = joined.join(frame.groupby(keys).size().rename("items"), on=keys)
    own, w = joined["own"].to_numpy(), joined["w"].to_numpy()
    m1, n_m1, m2, n_m2 = (joined[c].to_numpy() for c in ("m1", "n_m1", "m2", "n_m2"))
    own_top = own == m1
    others_at_top = np.where(own_top, n_m1 - 1, n_m1)
    best = np.where(others_at_top > 0, m1, m2)
    n_best = np.where(others_at_top > 0, others_at_top, n_m2)
    left = np.round(own - w, 9)
    score = np.where(left > best, 1.0, np.where(left == best, 1.0 / (1.0 + n_best), 0.0))
    others_weight = joined["n"].to_numpy() - w  # _top_two's n is the group's total weight here
    fallback = (joined["items"].to_numpy() == 1) | (np.round(others_weight, 9) <= 0)
    return np.where(fallback, 1.0 / joined["k"].to_numpy(), score)


def _frame(items: Sequence[ScoredItem], keys: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [tuple(UNMAPPED if (v := getattr(item, k)) is None else str(v) for k in keys) for item in items],
        columns=keys,
    )
    frame["code"] = [item.true_code for item in items]
    frame["k"] = [len(item.offered_codes) for item in items]
    return frame


def item_baselines(items: Sequence[ScoredItem], grouping: str = COUNTRY) -> dict[str, np.ndarray]:
    """What each unweighted baseline expects on each item (``items`` order): a domain's baselines are
    their means, and so are a group's on its items (``metrics.grouped.group_rows``); ``grouping``: what
    the items' country_code holds (``DomainData.grouping``)."""
    names = ("uniform", "majority_question", group_baseline(grouping))
    if not items:
        return {name: np.array([]) for name in names}
    return dict(zip(names, (np.array([1.0 / len(item.offered_codes) for item in items]),
                            majority_item_scores(items, BY_QUESTION),
                            majority_item_scores(items, BY_COUNTRY_QUESTION)), strict=True))


def baselines(items: Sequence[ScoredItem], weights: Mapping[int, float] | None = None,
              grouping: str = COUNTRY, expected: Mapping[str, np.ndarray] | None = None) -> dict[str, float]:
    """All baselines by name on the scored items (weighted ones too with the survey's ``weights``);
    ``expected``: ``item_baselines(items, grouping)`` when already computed."""
    expected = item_baselines(items, grouping) if expected is None else expected
    values = {name: float(scores.mean()) if len(scores) else math.nan for name, scores in expected.items()}
    if weights is not None:
        pairs = (("majority_question", BY_QUESTION), (group_baseline(grouping), BY_COUNTRY_QUESTION))
        for name, by in pairs:
            scores = weighted_majority_item_scores(items, weights, by) if items else np.array([])
            values[f"{name}_weighted"] = float(scores.mean()) if len(scores) else math.nan
    return values


def best_baseline(values: Mapping[str, float]) -> tuple[str, float] | None:
    """The strongest baseline ``(name, value)``, ignoring NaN; None when there is none."""
    finite = {name: v for name, v in values.items() if not math.isnan(v)}
    if not finite:
        return None
    name = max(finite, key=lambda n: finite[n])
    return name, finite[name]


def margin_over_best(accuracy: float, values: Mapping[str, float]) -> float:
    """Accuracy minus the strongest baseline (positive: the model beats every baseline)."""
    best = best_baseline(values)
    if best is None or math.isnan(accuracy):
        return math.nan
    return accuracy - best[1]
