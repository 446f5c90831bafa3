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


def _codes(values: list[str]) -> np.ndarray:
    return pd.factorize(np.array(values, dtype=object))[0]


def majority_item_scores(items: Sequence[ScoredItem], by: Sequence[str] = BY_QUESTION,
                         weights: Mapping[int, float] | None = None) -> np.ndarray:
    """Per-item expected accuracy of the leave-one-out majority guess (``items`` order), by count or (with
    ``weights``) by the population's design weight. Vectorised: leaving the item out lowers only its own
    code's total, by its weight, so its code wins iff what is left beats the best other code (a tie with
    ``t`` codes: 1 / (1 + t)); totals are rounded to 9 decimals so equal weights tie exactly. An item with
    no other respondent in its group falls back to ``1/k``."""
    keys = list(by)
    # each key as codes of its values (text columns of a whole survey's items were ~0.4 GB: issue 43)
    frame = pd.DataFrame({k: _codes([UNMAPPED if (v := getattr(i, k)) is None else str(v) for i in items])
                          for k in keys})
    frame["code"] = _codes([item.true_code for item in items])
    frame["k"] = np.array([len(item.offered_codes) for item in items])
    frame["w"] = 1.0 if weights is None else np.array([float(weights[item.person_id]) for item in items])
    totals = frame.groupby(keys + ["code"])["w"].sum().round(9).rename("c").reset_index()
    joined = frame.join(totals.set_index(keys + ["code"])["c"], on=keys + ["code"])
    joined = joined.join(_top_two(totals, keys), on=keys)
    own, w = joined["c"].to_numpy(), joined["w"].to_numpy()
    m1, n_m1, m2, n_m2 = (joined[c].to_numpy() for c in ("m1", "n_m1", "m2", "n_m2"))
    others_at_top = np.where(own == m1, n_m1 - 1, n_m1)
    best = np.where(others_at_top > 0, m1, m2)
    n_best = np.where(others_at_top > 0, others_at_top, n_m2)
    left = np.round(own - w, 9)
    score = np.where(left > best, 1.0, np.where(left == best, 1.0 / (1.0 + n_best), 0.0))
    fallback = np.round(joined["n"].to_numpy() - w, 9) <= 0  # _top_two's n: the group's total weight
    return np.where(fallback, 1.0 / joined["k"].to_numpy(), score)


def _top_two(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group: total ``n``, top total ``m1`` and its number of codes ``n_m1``, runner-up
    total ``m2`` (0 when every item has one code) and its number of codes ``n_m2``."""
    rank = counts.groupby(keys)["c"].rank(method="dense", ascending=False)
    counts = counts.assign(r1=rank == 1, r2=rank == 2, c2=counts["c"].where(rank == 2, 0))
    return counts.groupby(keys).agg(
        n=("c", "sum"), m1=("c", "max"), n_m1=("r1", "sum"), m2=("c2", "max"), n_m2=("r2", "sum")
    )


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
        for name, by in (("majority_question", BY_QUESTION), (group_baseline(grouping), BY_COUNTRY_QUESTION)):
            scores = majority_item_scores(items, by, weights) if items else None
            values[f"{name}_weighted"] = math.nan if scores is None else float(scores.mean())
    return values


def best_baseline(values: Mapping[str, float]) -> tuple[str, float] | None:
    """The strongest baseline ``(name, value)``, ignoring NaN; None when there is none."""
    finite = {name: v for name, v in values.items() if not math.isnan(v)}
    return max(finite.items(), key=lambda pair: pair[1]) if finite else None  # ties: the first


def margin_over_best(accuracy: float, values: Mapping[str, float]) -> float:
    """Accuracy minus the strongest baseline (positive: the model beats every baseline)."""
    best = best_baseline(values)
    return accuracy - best[1] if best else math.nan  # a NaN accuracy gives NaN
