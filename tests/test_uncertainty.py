"""Cluster bootstrap CIs and McNemar's exact test against exact, hand-derived values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from socbench.metrics.uncertainty import (
    cluster_bootstrap_ci,
    mcnemar_exact,
    paired_comparison,
    percentiles,
    stratified_mean,
)


def mcnemar_by_hand(b: int, c: int) -> float:
    """Two-sided exact McNemar: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1."""
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("b, c, expected",
                         [(7, 1, 18 / 256), (3, 12, 1152 / 32768), (5, 5, 1.0), (0, 0, 1.0)])
def test_mcnemar_exact_matches_the_binomial_formula(b: int, c: int, expected: float) -> None:
    # (7, 1): 2 * (C(8,0) + C(8,1)) / 2^8 = 18/256; (3, 12): 2 * (1 + 15 + 105 + 455) / 2^15.
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    if b + c:
        assert mcnemar_exact(b, c) == pytest.approx(mcnemar_by_hand(b, c))


def test_cluster_bootstrap_when_one_respondent_has_most_items() -> None:
    # Respondent 0 answers 50 items, all right; respondents 1..10 one item each, all wrong.
    # Resampling 11 respondents draws respondent 0 K ~ Binomial(11, 1/11) times; accuracy is
    # 50K / (50K + 11 - K). P(K=0) = (10/11)^11 = 0.35 > 2.5%, so the lower bound is 0;
    # P(K<=2) = 0.929 < 97.5% <= P(K<=3) = 0.987, so the upper bound is 150/158.
    correct = [1] * 50 + [0] * 10
    people = [0] * 50 + list(range(1, 11))
    cdf = np.cumsum([math.comb(11, k) * (1 / 11) ** k * (10 / 11) ** (11 - k) for k in range(12)])
    assert cdf[0] > 0.025 and cdf[2] < 0.975 < cdf[3]
    for seed in range(3):
        low, high = cluster_bootstrap_ci(correct, people, n_resamples=4000, seed=seed)
        assert low == pytest.approx(0.0) and high == pytest.approx(150 / 158)
    # Treating items as independent gives a CI about a quarter as wide: clustering matters.
    iid_low, iid_high = cluster_bootstrap_ci(correct, range(60), n_resamples=4000, seed=0)
    assert iid_low > 0.7 and iid_high < 0.95 and (iid_high - iid_low) * 3 < high - low


def test_stratified_bootstrap_keeps_strata_apart() -> None:
    # Domain A: two respondents, all right; domain B: two respondents, all wrong. Each domain's
    # accuracy is fixed under resampling within domains, so the mean is exactly 0.5 every time.
    correct = [1, 1, 1, 0, 0, 0]
    people = [1, 1, 2, 3, 3, 4]
    domains = ["A", "A", "A", "B", "B", "B"]
    assert stratified_mean(correct, domains) == pytest.approx(0.5)
    assert cluster_bootstrap_ci(correct, people, domains, seed=1) == pytest.approx((0.5, 0.5))
    low, high = cluster_bootstrap_ci(correct, people, seed=1)  # pooled: respondents mix, CI widens
    assert low < 0.5 < high


def test_bootstrap_is_seeded_and_undefined_for_one_respondent() -> None:
    rng = np.random.default_rng(3)
    correct, people = rng.random(200) < 0.4, np.repeat(np.arange(40), 5)
    assert cluster_bootstrap_ci(correct, people, seed=7) == cluster_bootstrap_ci(correct, people, seed=7)
    low, high = cluster_bootstrap_ci(correct, people, seed=7)
    assert low < correct.mean() < high
    assert all(math.isnan(v) for v in cluster_bootstrap_ci([1, 0, 1], [9, 9, 9]))
    # A one-respondent stratum is a constant beside a varying one.
    low, high = cluster_bootstrap_ci([1, 1, 0, 1, 0], [1, 1, 2, 3, 3], ["A", "A", "B", "B", "B"], seed=0)
    assert 0.5 * (1 + 0.0) <= low <= high <= 0.5 * (1 + 1.0)


def test_paired_comparison_counts_test_and_difference() -> None:
    a = [1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 1]
    b = [0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1]
    people = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    result = paired_comparison(a, b, people, n_resamples=2000, seed=0)
    assert (result.a_only, result.b_only, result.both_correct, result.neither) == (7, 1, 2, 2)
    assert result.mcnemar_p == pytest.approx(mcnemar_by_hand(7, 1))
    assert result.accuracy_a == pytest.approx(9 / 12) and result.accuracy_b == pytest.approx(3 / 12)
    assert result.difference == pytest.approx(6 / 12)
    assert result.n_items == 12 and result.n_respondents == 6
    low, high = result.difference_ci
    assert 0 < low < 0.5 < high <= 1.0
    with pytest.raises(ValueError):
        paired_comparison([1, 0], [1], [1, 2])


def scipy_cluster_ci(values, clusters, strata, n_resamples: int, seed: int) -> tuple[float, float]:
    """The CI as it was computed before issue 43: ``np.unique`` totals and scipy's ``bootstrap``."""
    from scipy.stats import bootstrap

    values, clusters, keys = np.asarray(values, float), np.asarray(clusters), np.asarray(strata)
    totals = []
    for stratum in np.unique(keys):
        _, inverse = np.unique(clusters[keys == stratum], return_inverse=True)
        totals.append((np.bincount(inverse, weights=values[keys == stratum]), np.bincount(inverse) * 1.0))
    varying = [t for t in totals if len(t[0]) >= 2]
    fixed = sum(float(s.sum() / n.sum()) for s, n in totals if len(s) < 2)

    def statistic(*indices, axis=-1):
        parts = [s[i].sum(axis=axis) / n[i].sum(axis=axis) for (s, n), i in zip(varying, indices)]
        return (np.sum(parts, axis=0) + fixed) / len(totals)

    result = bootstrap(tuple(np.arange(len(s)) for s, _ in varying), statistic, n_resamples=n_resamples,
                       vectorized=True, paired=False, method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def test_bootstrap_draws_scipys_resamples_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43: the CI without scipy's copies, its draws in chunks of rows, clusters ranked by hashing:
    the same resamples, so the same floats as scipy's ``bootstrap`` over the same totals."""
    from socbench.metrics import uncertainty

    monkeypatch.setattr(uncertainty, "RESAMPLE_CHUNK", 500)  # rows drawn a few at a time
    rng = np.random.default_rng(8)
    domains = np.repeat(["Family", "Work", "Zeta", "Ägypten"], [400, 300, 3, 250])
    people = [f"{d}:{p}" for d, p in zip(domains, rng.integers(0, 90, len(domains)), strict=True)]
    people[700:703] = ["Zeta:only"] * 3  # a one-respondent stratum: a constant
    for seed in range(3):
        values = rng.integers(-1, 2, len(domains)) * 1.0
        expected = scipy_cluster_ci(values, people, domains, 999, seed)
        assert cluster_bootstrap_ci(values, people, list(domains), n_resamples=999, seed=seed) == expected
        assert (cluster_bootstrap_ci(values, people, ["all"] * len(values), n_resamples=999, seed=seed)
                == scipy_cluster_ci(values, people, ["all"] * len(values), 999, seed))


def test_percentiles_are_scipys_quantile_bit_for_bit() -> None:
    """The CI's bounds without importing ``scipy.stats`` in a run: the same floats as its ``quantile``."""
    from scipy.stats import quantile

    rng = np.random.default_rng(7)
    at = np.array([0.025, 0.975, 0.0, 0.5, 1.0])
    for n in [*range(1, 40), 999, 1000, 1001]:
        values = rng.random(n) if n % 2 else np.round(rng.random(n), 2)
        assert np.array_equal(percentiles(values, at), quantile(values, at))
