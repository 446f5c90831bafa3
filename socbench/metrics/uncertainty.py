"""Uncertainty of accuracy: a respondent's items are not independent (a misread persona is misread on every
question), so CIs resample respondents with all their items, within each domain (the statistic: the mean of
the per-domain accuracies, as the summaries report). Paired comparisons add McNemar's exact test, which
treats items as independent and so is optimistic: trust the bootstrap CI of the difference."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
RESAMPLE_CHUNK = 2**22  # drawn cluster indices held at once (32 MB)

Totals = tuple[np.ndarray, np.ndarray]  # per-cluster sums of the values, per-cluster item counts


def _ranks(labels: Sequence) -> np.ndarray:
    """Each label's rank among the distinct labels (``np.unique``'s order), by hashing: sorting a pooled
    run's millions of ``domain:person`` strings was most of a CI's time."""
    import pandas as pd  # here: pandas takes a second to import

    array = labels
    if not isinstance(labels, np.ndarray):
        array = np.empty(len(labels), dtype=object)  # one label a slot, tuples too
        array[:] = list(labels)
    return pd.factorize(array, sort=True, use_na_sentinel=False)[0]


def _strata_totals(values: np.ndarray, clusters: Sequence, strata: np.ndarray | None) -> list[Totals]:
    """Per stratum: the sums and item counts of each cluster (respondent)."""
    keys, ranks = np.zeros(len(values), dtype=int) if strata is None else strata, _ranks(clusters)
    totals = []
    for stratum in np.unique(keys):
        mask = keys == stratum
        present = np.zeros(ranks.max() + 1, dtype=bool)
        present[ranks[mask]] = True
        inverse = (np.cumsum(present) - 1)[ranks[mask]]  # np.unique's inverse, without its sort
        totals.append((np.bincount(inverse, weights=values[mask]), np.bincount(inverse).astype(float)))
    return totals


def _as_arrays(values: Sequence[float], clusters: Sequence, strata: Sequence | None):
    """The values as floats, the strata as their ranks; the clusters as given (ranked per stratum)."""
    values_a = np.asarray(values, dtype=float)
    if len(clusters) != len(values_a) or (strata is not None and len(strata) != len(values_a)):
        raise ValueError("values, clusters and strata must have one entry per item")
    return values_a, clusters, None if strata is None else _ranks(strata)


def stratified_mean(values: Sequence[float], strata: Sequence | None = None) -> float:
    """Mean of ``values`` within each stratum, averaged over strata (plain mean without)."""
    values_a, _, strata_a = _as_arrays(values, range(len(values)), strata)
    if len(values_a) == 0:
        return math.nan
    if strata_a is None:
        return float(values_a.mean())
    return float(np.mean([values_a[strata_a == s].mean() for s in np.unique(strata_a)]))


def accuracy_ci(correct: Sequence[float], clusters: Sequence, strata: Sequence | None = None, *,
                min_respondents: int, n_resamples: int = DEFAULT_RESAMPLES,
                seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """The respondent-bootstrap CI of accuracy, or None below ``min_respondents`` respondents
    (an interval from two people would be printed as if it meant something)."""
    if len(set(clusters)) < min_respondents:
        return None
    return cluster_bootstrap_ci(correct, clusters, strata, n_resamples=n_resamples, seed=seed)


def cluster_bootstrap_ci(values: Sequence[float], clusters: Sequence, strata: Sequence | None = None, *,
                         n_resamples: int = DEFAULT_RESAMPLES,
                         seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile CI of ``stratified_mean(values, strata)``, resampling clusters (respondents) in each
    stratum; a one-respondent stratum enters as a constant, and with no other the CI is (NaN, NaN)."""
    values_a, clusters_a, strata_a = _as_arrays(values, clusters, strata)
    totals = _strata_totals(values_a, clusters_a, strata_a) if len(values_a) else []
    varying = [t for t in totals if len(t[0]) >= 2]
    if not varying:
        return math.nan, math.nan
    fixed = sum(float(s.sum() / n.sum()) for s, n in totals if len(s) < 2)
    rng = np.random.default_rng(seed)
    parts = [_resampled_ratios(s, n, rng, n_resamples) for s, n in varying]
    theta = (np.sum(parts, axis=0) + fixed) / len(totals)
    low, high = percentiles(theta, np.array([(1 - CONFIDENCE) / 2, 1 - (1 - CONFIDENCE) / 2]))
    return float(low), float(high)


def percentiles(values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``scipy.stats.quantile(values, p)`` of a vector without NaN (its default, Hyndman and Fan's 7th), in
    its arithmetic (the same floats): a run's only use of ``scipy.stats``, which takes 0.5 s to import."""
    y, n = np.sort(values), float(len(values))
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j, g = jp1 - 1, jg % 1
    g[j < 0] = 0
    j, jp1 = (np.clip(k, 0.0, n - 1).astype(np.int64) for k in (j, jp1))
    return (1 - g) * y[j] + g * y[jp1]


def _resampled_ratios(sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator,
                      n_resamples: int) -> np.ndarray:
    """Each resample's sum of values over its items, clusters drawn with replacement: scipy's
    ``bootstrap`` (vectorized, one batch) without its copies, the same draws (one ``(n_resamples,
    clusters)`` array, drawn here in rows of ``RESAMPLE_CHUNK`` values: the same stream, bounded memory)."""
    rows = max(1, RESAMPLE_CHUNK // len(sums))
    ratios = []
    for start in range(0, n_resamples, rows):
        drawn = rng.integers(0, len(sums), (min(rows, n_resamples - start), len(sums)))
        ratios.append(sums[drawn].sum(axis=-1) / counts[drawn].sum(axis=-1))
    return np.concatenate(ratios)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    from scipy.stats import binomtest

    n = a_only + b_only
    if n == 0:
        return 1.0
    return float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue)


@dataclass(frozen=True)
class PairedComparison:
    """Model A against model B on the same items (difference = A - B)."""

    n_items: int
    n_respondents: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    difference_ci: tuple[float, float]
    both_correct: int
    a_only: int  # A right, B wrong
    b_only: int  # A wrong, B right
    neither: int
    mcnemar_p: float


def paired_comparison(correct_a: Sequence[bool], correct_b: Sequence[bool], clusters: Sequence,
                      strata: Sequence | None = None, *, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> PairedComparison:
    """Compare two models item by item (``clusters``: each item's respondent): stratified means (over
    domains when ``strata`` are domains), McNemar's counts pooled over all items."""
    a, b = (np.asarray(correct, dtype=bool) for correct in (correct_a, correct_b))
    if a.shape != b.shape:
        raise ValueError("both models need one correctness value per shared item")
    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    diff = a.astype(float) - b.astype(float)
    return PairedComparison(
        n_items=len(a), n_respondents=len(set(zip(strata if strata is not None else [0] * len(a), clusters))),
        accuracy_a=stratified_mean(a.astype(float), strata),
        accuracy_b=stratified_mean(b.astype(float), strata),
        difference=stratified_mean(diff, strata),
        difference_ci=cluster_bootstrap_ci(diff, clusters, strata, n_resamples=n_resamples, seed=seed),
        both_correct=int(np.sum(a & b)), a_only=a_only, b_only=b_only, neither=int(np.sum(~a & ~b)),
        mcnemar_p=mcnemar_exact(a_only, b_only),
    )
