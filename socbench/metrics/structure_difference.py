"""Is one predictor's structure measurably closer to the survey's than another's? The report may say that the
model's group differences follow the survey's more closely than the classifier's only where the difference
of their profile correlations is larger than its uncertainty: a paired bootstrap over respondents (the same
resampled people for both predictors and for the survey's own answers).

Its cost stays linear in items with a small constant: respondents are dealt at random into at most
``BLOCKS`` blocks (one block each in a domain of up to ``BLOCKS`` people: the plain respondent bootstrap),
each pair's counts are tallied per block in one pass, and a resample is a multinomial draw of whole blocks,
so every resample costs blocks x table cells a pair, whatever the number of respondents (50,000 or 40)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from socbench.metrics.structure import PairRows, item_groups, pair_rows, usable
from socbench.types import ScoredItem

BLOCKS = 50
RESAMPLES = 400
LEVEL = 0.95
METHOD = (f"paired bootstrap over respondents ({RESAMPLES} resamples; above {BLOCKS} respondents, "
          f"{BLOCKS} random blocks of them)")


def cramers_v_stack(tables: np.ndarray) -> np.ndarray:
    """Cramér's V of each groups x codes table in a stack (``structure.cramers_v``'s arithmetic: empty rows
    and columns left out, 0 for a table with fewer than two of either)."""
    n = tables.sum(axis=(1, 2))
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
        cells = tables - expected  # squared, divided in place (np.where's copies were a third of its time):
        np.square(cells, out=cells)  # a cell with none expected holds none, so it stays 0 as np.where made it
        chi2 = np.divide(cells, expected, out=cells, where=expected > 0).sum(axis=(1, 2))
        k = np.minimum((rows > 0).sum(axis=1), (cols > 0).sum(axis=1))
        return np.where(k >= 2, np.sqrt(chi2 / (n * (k - 1))), 0.0)


def _resampled_v(rows: PairRows, block: Mapping[int, int], weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """Cramér's V of group by the real and by the simulated answer in every resample (``weights``: resamples x
    blocks, how often each block is drawn)."""
    blocks = np.array([block[p] for p in rows.person.tolist()])
    groups, _ = pd.factorize(rows.group)

    def tallied(codes: np.ndarray) -> np.ndarray:
        shape = (weights.shape[1], groups.max() + 1, codes.max() + 1)
        flat = np.ravel_multi_index((blocks, groups, codes), shape)
        tallies = np.bincount(flat, minlength=math.prod(shape)).reshape(shape[0], -1)
        return cramers_v_stack((weights @ tallies).reshape(len(weights), *shape[1:]))

    return tallied(rows.real), tallied(rows.simulated)


def profile_resamples(model: Sequence[ScoredItem], items: Sequence[ScoredItem] | None = None, *,
                      resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """The profile correlation of ``items`` (default: ``model``'s) in the sample (row 0) and in every
    resample of ``model``'s respondents, as ``structure`` computes it (NaN with fewer than 3 pairs or a
    constant real profile; 0 where the simulated answers do not differ between groups at all, as the report
    reads it): one predictor's half of ``profile_difference``, so each half is computed as soon as its
    answers are known (the same people, groups and draws for any ``items``)."""
    people = sorted({item.person_id for item in model})
    rng = np.random.default_rng(seed)
    n_blocks = max(min(len(people), BLOCKS), 1)
    block = dict(zip(people, (rng.permutation(len(people)) % n_blocks).tolist(), strict=True))
    draws = rng.multinomial(n_blocks, np.full(n_blocks, 1 / n_blocks), size=resamples)
    # row 0: the sample itself. As floats, the resampled counts stay exact (whole numbers far below 2**53)
    # and are summed by BLAS: a third of the integers' loop (0.3 s a half at 1,000 respondents)
    weights = np.vstack([np.ones((1, n_blocks)), draws]).astype(float)
    answered = [item for item in (model if items is None else items) if usable(item)]
    # a pair's rows are let go once its two columns are tallied: all pairs' rows at once were every item
    # once per attribute (~1.7 GB at 50,000 respondents)
    from threadpoolctl import threadpool_limits  # here: as where the fits use it

    with threadpool_limits(limits=1):  # small products: BLAS's threads would only spin beside the caller's
        found = [_resampled_v(rows, block, weights) for _, _, rows in pair_rows(answered, item_groups(model))]
    if len(found) < 3:
        return np.full(len(weights), math.nan)
    real, sim = (np.column_stack(side) for side in zip(*found, strict=True))
    alike = (sim == 0).all(axis=1)
    real, sim = real - real.mean(axis=1, keepdims=True), sim - sim.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (real * sim).sum(axis=1) / np.sqrt((real ** 2).sum(axis=1) * (sim ** 2).sum(axis=1))
    return np.where(alike, 0.0, r)


def profile_difference(model: Sequence[ScoredItem], other: Sequence[ScoredItem], *,
                       resamples: int = RESAMPLES, seed: int = 0) -> dict[str, float | int | str]:
    """The model's profile correlation minus ``other``'s (both predicting the same respondents' answers)
    and its ``LEVEL`` percentile CI from a paired bootstrap over respondents (``difference_record``)."""
    mine, others = (profile_resamples(model, items, resamples=resamples, seed=seed)
                    for items in (model, other))
    return difference_record(mine - others)


def difference_record(difference: np.ndarray) -> dict[str, float | int | str]:
    """The sample's difference (row 0) and its percentile CI over the resamples (``ci_low``/``ci_high`` NaN
    where fewer than half the resamples give both correlations)."""
    resamples = len(difference) - 1
    found = difference[1:][np.isfinite(difference[1:])]
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(found, [tail, 100 - tail]) if len(found) >= resamples / 2 else (math.nan,) * 2
    return {"difference": float(difference[0]), "ci_low": float(low), "ci_high": float(high),
            "resamples": int(len(found)), "level": LEVEL, "method": METHOD}


def measurable(found: Mapping[str, Any] | None) -> int:
    """+1 / -1 where the CI lies wholly above / below 0 (one side measurably closer), else 0."""
    low, high = ((found or {}).get(key) for key in ("ci_low", "ci_high"))
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return 0
    return 1 if low > 0 else -1 if high < 0 else 0
