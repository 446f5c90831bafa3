"""Structure preservation: would the simulated population reproduce the survey's findings? A model can match
marginal shares and still erase who answers what (SSDataBench: simulations "compress heterogeneity"). For any
predictor's hard answers (unweighted), per (question, attribute): Cramér's V of group and answer, real and
simulated, on the same respondents (``profile_correlation``: Pearson's r over the pairs); the survey's clear
gaps between two groups (Welch p < ``GAP_ALPHA``, mean answer position) and how many the simulation gets in
the same direction; and the entropy of simulated over real answers (< 1: the population is compressed)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from socbench.metrics.distribution import group_codes, split_groups
from socbench.types import ScoredItem

MIN_RESPONDENTS = 30
MIN_GROUP_SIZE = 10
GAP_ALPHA = 0.05
COUNTRY = "country"
Groups = Mapping[int, Mapping[str, str]]  # person id -> {attribute: group}


@dataclass(frozen=True)
class PairStructure:
    """One (question, attribute) pair: its association and its clear subgroup gaps."""
    question_id: str
    attribute: str
    respondents: int
    real_v: float
    simulated_v: float
    gaps: tuple[tuple[str, str, float, float], ...]  # (group a, group b, real gap, simulated gap)


@dataclass(frozen=True)
class Structure:
    """A predictor's structure figures for one domain."""
    pairs: tuple[PairStructure, ...]
    profile_correlation: float
    mean_real_v: float
    mean_simulated_v: float
    gaps: int  # clear real gaps
    gaps_same_sign: int
    sign_agreement: float
    heterogeneity: dict[str, float]  # question -> entropy ratio
    heterogeneity_ratio: float  # median over questions


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a groups × codes count table; 0 when only one row or column is non-empty. scipy's
    ``association(table, method="cramer", correction=False)``, bit for bit (tested), in its own arithmetic:
    scipy's checks were 1.4 ms a call, two calls a (question, attribute) pair."""
    table = np.asarray(table, dtype=np.int64)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return 0.0
    observed = table.astype(np.float64)
    expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True) / observed.sum()
    chi2 = ((observed - expected) ** 2 / expected).sum()
    return math.sqrt(chi2 / table.sum() / (min(table.shape) - 1))


def _entropy(values: Sequence[str]) -> float:
    """Shannon entropy (nats) of how often each value occurs, counted largest first (the array
    ``value_counts`` gives, tie order aside): ``scipy.stats.entropy``'s arithmetic, bit for bit, without
    its array-API wrapper (1-2 ms a call: most of the structure yardstick's time, a call per question)."""
    from scipy.special import entr

    counts = np.array(sorted(Counter(values).values(), reverse=True), dtype=float)
    return float(np.sum(entr(counts / np.sum(counts))))


def heterogeneity_ratio(real: Sequence[str], simulated: Sequence[str]) -> float:
    """H(simulated answers) / H(real answers) of the same items; NaN when the real answers are all alike (or
    there are none)."""
    h_real = _entropy(real)
    return float(_entropy(simulated) / h_real) if h_real > 0 else math.nan


def usable(item: ScoredItem) -> bool:
    return item.parse_error is None and item.predicted_code in item.offered_codes


def item_groups(items: Sequence[ScoredItem]) -> dict[int, dict[str, str]]:
    """Person id -> the items' persona groups, plus ``country`` from the country code."""
    groups: dict[int, dict[str, str]] = {}
    for item in items:
        found = groups.setdefault(item.person_id, dict(item.groups))
        if item.country_code is not None:
            found[COUNTRY] = item.country_code
    return groups


def _gaps(group: np.ndarray, real: np.ndarray,
          simulated: np.ndarray) -> tuple[tuple[str, str, float, float], ...]:
    """Clear real gaps (Welch p < ``GAP_ALPHA``) between every two groups, with the simulated gap; one
    vectorised Welch test, as a country attribute has hundreds of pairs per question."""
    codes, names = pd.factorize(group, sort=True)
    real, simulated = real.astype(float), simulated.astype(float)
    n = np.bincount(codes).astype(float)
    mean, sim = np.bincount(codes, real) / n, np.bincount(codes, simulated) / n
    with np.errstate(divide="ignore", invalid="ignore"):  # sd: two-pass, ddof 1 (n >= 2 here)
        sd = np.sqrt(np.bincount(codes, (real - mean[codes]) ** 2) / (n - 1))
    a, b = np.triu_indices(len(names), 1)  # every two groups, in ``itertools.combinations`` order
    if not len(a):
        return ()
    real_gap = mean[a] - mean[b]
    p = welch_p(mean[a], sd[a], n[a], mean[b], sd[b], n[b])
    names = [str(name) for name in names]
    return tuple((names[i], names[j], float(gap), float(sim[i] - sim[j]))
                 for i, j, gap, pv in zip(a, b, real_gap, np.atleast_1d(p), strict=True)
                 if gap != 0 and not math.isnan(pv) and pv < GAP_ALPHA)


def welch_p(mean_a: np.ndarray, sd_a: np.ndarray, n_a: np.ndarray, mean_b: np.ndarray, sd_b: np.ndarray,
            n_b: np.ndarray) -> np.ndarray:
    """scipy's ``ttest_ind_from_stats(..., equal_var=False).pvalue`` in its own arithmetic, bit for bit
    (tested): its array-API set-up was most of a pair's time."""
    from scipy.special import stdtr

    var_a, var_b = sd_a**2 / n_a, sd_b**2 / n_b
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
        t = (mean_a - mean_b) / np.sqrt(var_a + var_b)
    return 2 * stdtr(np.where(np.isnan(df), 1.0, df), -np.abs(t))


def _table(group: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """The groups x codes count table (faster than ``pd.crosstab``)."""
    rows, _ = pd.factorize(group)
    cols, _ = pd.factorize(answer)
    table = np.zeros((rows.max() + 1, cols.max() + 1), dtype=np.int64)
    np.add.at(table, (rows, cols), 1)
    return table


@dataclass(frozen=True)
class PairRows:
    """A pair's rows as columns: person ids, their groups, the real and the simulated answer's position."""
    person: np.ndarray
    group: np.ndarray  # objects: the group names
    real: np.ndarray
    simulated: np.ndarray


def pair_rows(answered: Sequence[ScoredItem], groups: Groups) -> Iterator[tuple[str, str, PairRows]]:
    """Every (question, attribute) pair that qualifies (``MIN_RESPONDENTS``), with its rows in groups of at
    least ``MIN_GROUP_SIZE`` (decided from counts: most pairs of a small domain do not qualify). As columns: a
    question's items read once, an attribute's groups taken from one column per attribute over the people (a
    row tuple an item and attribute, four times a domain, was most of the structure yardsticks' time)."""
    people = pd.Index(list(groups))
    table = {a: np.array([g.get(a) for g in groups.values()] + [None], dtype=object)  # last: no groups
             for a in sorted({a for g in groups.values() for a in g})}
    for (qid,), group in split_groups(answered, ("question_id",)).items():
        position = {code: i for i, code in enumerate(group_codes(group))}
        person = np.array([i.person_id for i in group])
        real, simulated = (np.array([position[getattr(i, name)] for i in group], dtype=np.int64)
                           for name in ("true_code", "predicted_code"))
        at = people.get_indexer(person)  # -1: the last, None
        for attribute, column in table.items():
            value = column[at]
            has = pd.notna(value)
            if not has.any():
                continue
            codes, _ = pd.factorize(value[has])
            sizes = np.bincount(codes)
            kept = np.flatnonzero(has)[sizes[codes] >= MIN_GROUP_SIZE]
            if len(kept) >= MIN_RESPONDENTS and (sizes >= MIN_GROUP_SIZE).sum() >= 2:
                yield qid, attribute, PairRows(person[kept], value[kept], real[kept], simulated[kept])


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """``scipy.stats.pearsonr(x, y).statistic`` of two varying vectors, its operations in its order (the same
    float): the classifier's process would import ``scipy.stats`` for it alone (0.3 s of its 3)."""
    centred = (x - x.mean(), y - y.mean())
    unit = [v / (np.abs(v).max() * np.linalg.norm(v / np.abs(v).max(), axis=-1)) for v in centred]
    return float(np.clip(np.vecdot(*unit), -1.0, 1.0))


def structure(items: Sequence[ScoredItem]) -> Structure:
    """Structure figures of the items' predicted answers against their true answers, over the items'
    persona groups and country: each qualifying (question, attribute) pair's association and clear gaps."""
    answered = [item for item in items if usable(item)]
    heterogeneity = {qid: heterogeneity_ratio([i.true_code for i in group],
                                              [str(i.predicted_code) for i in group])
                     for (qid,), group in split_groups(answered, ("question_id",)).items()}
    pairs = tuple(PairStructure(qid, attribute, len(rows.person), cramers_v(_table(rows.group, rows.real)),
                                cramers_v(_table(rows.group, rows.simulated)),
                                _gaps(rows.group, rows.real, rows.simulated))
                  for qid, attribute, rows in pair_rows(answered, item_groups(items)))
    real = np.array([p.real_v for p in pairs])
    sim = np.array([p.simulated_v for p in pairs])
    varies = len(pairs) >= 3 and real.std() > 0 and sim.std() > 0
    gaps = [g for p in pairs for g in p.gaps]
    same = sum(np.sign(real_gap) == np.sign(sim_gap) for _, _, real_gap, sim_gap in gaps)
    ratios = [r for r in heterogeneity.values() if not math.isnan(r)]
    correlation = pearson(real, sim) if varies else math.nan
    return Structure(pairs=pairs, profile_correlation=correlation,
                     mean_real_v=float(real.mean()) if len(pairs) else math.nan,
                     mean_simulated_v=float(sim.mean()) if len(pairs) else math.nan,
                     gaps=len(gaps), gaps_same_sign=int(same),
                     sign_agreement=same / len(gaps) if gaps else math.nan, heterogeneity=heterogeneity,
                     heterogeneity_ratio=float(np.median(ratios)) if ratios else math.nan)
