"""What a run's answers are worth as respondents: PPI++ estimates per question, checked.

Per domain a seeded random ``n`` of its respondents play the labelled humans; the model's answers for
the rest are the unlabelled part. Per question: each option's share and, on a scale, the mean code (PPI++
and classical intervals, gain, PPI correlation), per country, subgroup gaps and one regression on the
persona groups. A missing model answer is imputed by the model's average answer (still unbiased).
**Checked, not assumed**: ``repeats`` seeded i.i.d. studies drawn from the domain as the population give
the empirical coverage of both intervals and the gain's spread (docs/estimates.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from socbench.errors import ConfigError
from socbench.estimates.items import MEAN, targets
from socbench.estimates.ppi import Estimate, classical_fit, plan_budget, ppi_mean, ppi_regression
from socbench.estimates.repeated import check_question, draw_counts
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.persona_groups import AGE_GROUP, ATTRIBUTES, SEX, UNKNOWN, age_order
from socbench.types import COUNTRY

DEFAULT_FRACTION = 0.1
RUN_REPEATS = 20  # the run's own record: ~0.5 s CPU for 1,000 respondents x 20 questions (docs/estimates.md)
THREADS = min(4, os.cpu_count() or 1)  # the repeated check's questions at once
MIN_LABELLED = 300  # the labelled n from which the 95% intervals were measured to hold: bench/ppi_coverage.py


def small_sample(n: int) -> str | None:
    """The one-line warning an estimate from fewer labelled respondents carries (None from enough)."""
    return None if n >= MIN_LABELLED else (f"n = {n} labelled, below {MIN_LABELLED}: the 95% intervals may "
                                           "cover less than 95% (measured: docs/estimates.md)")


@dataclass(frozen=True)
class Settings:
    labelled: int | None = None  # labelled respondents per domain; else ``fraction`` of them
    fraction: float | None = None
    alpha: float = 0.05
    repeats: int = 200
    seed: int = 0
    budget: float | None = None  # with cost_human and cost_model: the planner
    cost_human: float | None = None
    cost_model: float | None = None
    min_respondents: int = DEFAULT_MIN_RESPONDENTS

    def labelled_of(self, domain: str, people: int) -> int | str:
        """Labelled respondents of a domain, or why a fraction of it is too few to estimate from;
        a ``--labelled`` size the domain cannot give is one line."""
        fraction = self.fraction or DEFAULT_FRACTION
        n = self.labelled if self.labelled is not None else round(fraction * people)
        if self.min_respondents <= n < people:
            return n
        if self.labelled is not None:
            raise ConfigError(f"--labelled {n}: {domain} has {people} respondents; the labelled part must "
                              f"hold at least {self.min_respondents} and leave some unlabelled")
        return (f"{domain}: left out: {people} respondents, {n} labelled, fewer than the "
                f"{self.min_respondents} an interval needs (give --labelled or a larger --fraction)")

    def plan(self, rho: float) -> dict[str, float] | None:
        """The budget planner's split for this PPI correlation (None without a budget)."""
        costs = (self.budget, self.cost_human, self.cost_model)
        return None if None in costs else plan_budget(rho, *costs)  # type: ignore[arg-type]


RUN_SETTINGS = Settings(repeats=RUN_REPEATS)


@dataclass(frozen=True)
class Question:
    """One question's targets over its respondents, and where each domain person's row is."""

    question_id: str
    names: tuple[str, ...]  # "mean" (a scale) first, then each option's share ("share 1", ...)
    y: np.ndarray  # respondents x targets: people's answers
    yhat: np.ndarray  # the model's
    w: np.ndarray | None
    row_of: np.ndarray  # domain person index -> row here, -1 where the person was not asked
    groups: dict[str, np.ndarray]  # country_code and each persona attribute, in row order
    no_model_answer: int
    grouping: str = COUNTRY  # what country_code holds: a country, or the study's grouping ("province")

    def rows(self, people: np.ndarray) -> np.ndarray:
        found = self.row_of[people]
        return found[found >= 0]

    def estimate(self, lab: np.ndarray, unl: np.ndarray) -> Estimate:
        w = self.w
        return ppi_mean(self.y[lab], self.yhat[lab], self.yhat[unl], None if w is None else w[lab],
                        None if w is None else w[unl])

    def full(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        w = None if self.w is None else self.w[rows]
        return np.average(self.y[rows], axis=0, weights=w)

    @property
    def shares(self) -> np.ndarray:
        """Which targets are an option's share (their intervals: on the logit scale)."""
        return np.array([name != MEAN for name in self.names])

    def within(self, lab: np.ndarray, unl: np.ndarray, column: str, value: str,
               least: int) -> tuple[Estimate, np.ndarray] | None:
        """The estimate within one group (``column`` == ``value``) and its value from all its respondents;
        None with fewer than ``least`` labelled or 2 unlabelled in it."""
        inside = self.groups[column] == value
        gl, gu = lab[inside[lab]], unl[inside[unl]]
        if len(gl) < least or len(gu) < 2:
            return None
        return self.estimate(gl, gu), self.full(np.flatnonzero(inside))


def question(qid: str, frame: pd.DataFrame, person_index: dict[str, int]) -> Question:
    y, yhat, answered, names = targets(frame)
    yhat[~answered] = yhat[answered].mean(0) if answered.any() else 0.0  # label-free imputation
    row_of = np.full(len(person_index), -1)
    row_of[[person_index[p] for p in frame["person_id"]]] = np.arange(len(frame))
    w = frame["weight"].to_numpy(dtype=float)
    groups = {c: frame[c].to_numpy(dtype=object) for c in ("country_code", *ATTRIBUTES) if c in frame}
    grouping = str(frame["grouping"].iloc[0]) if "grouping" in frame else COUNTRY
    return Question(qid, names, y, yhat, None if np.isnan(w).any() else w, row_of, groups,
                    int((~answered).sum()), grouping)


def _fields(e: Estimate, full: np.ndarray, alpha: float,
            share: bool | np.ndarray = False) -> list[dict[str, Any]]:
    """Each entry of an estimate as plain numbers, beside its value from all respondents."""
    (low, high), (c_low, c_high) = e.ci(alpha, share=share), e.ci(alpha, classical=True, share=share)
    return [{"n": e.n, "N": e.N, "estimate": float(e.estimate[j]), "ci": [float(low[j]), float(high[j])],
             "classical": float(e.classical[j]), "classical_ci": [float(c_low[j]), float(c_high[j])],
             "lambda": float(e.lam[j]), "rho": float(e.rho[j]), "gain": float(e.gain[j]),
             "full_sample": float(full[j])} for j in range(len(e.estimate))]


def _groups(q: Question, lab: np.ndarray, unl: np.ndarray, s: Settings) -> list[dict[str, Any]]:
    """Per country (or group of the study's grouping variable: ``province=AB``) with enough labelled
    respondents (when the question was asked in several)."""
    countries = sorted(set(q.groups["country_code"]))
    inside = {c: found for c in countries if len(countries) > 1
              and (found := q.within(lab, unl, "country_code", c, s.min_respondents))}
    return [{"target": name, "group": f"{q.grouping}={c}", **fields} for c, found in inside.items()
            for name, fields in zip(q.names, _fields(*found, s.alpha, q.shares))]


def _gap_pairs(attribute: str, levels: set[str]) -> list[tuple[str, str, str]]:
    """The gap an attribute's groups (as the source names them) are compared by: the two sexes, or the
    youngest minus the oldest age group (by the ages their labels name, ``age_order``)."""
    known = sorted(level for level in levels if level != UNKNOWN)
    if attribute == SEX:
        return [(SEX, *known)] if len(known) == 2 else []
    ages = sorted((order, level) for level in known if (order := age_order(level)) is not None)
    return [(AGE_GROUP, ages[0][1], ages[-1][1])] if len(ages) > 1 else []


def _gaps(q: Question, lab: np.ndarray, unl: np.ndarray, s: Settings) -> list[dict[str, Any]]:
    """First minus second group of the question's headline target, of the groups with enough labelled."""
    found = []
    for attribute in (a for a in (SEX, AGE_GROUP) if a in q.groups):
        counts = pd.Series(q.groups[attribute][lab]).value_counts()
        for _, first, second in _gap_pairs(attribute, set(counts.index[counts >= s.min_respondents])):
            sides = [q.within(lab, unl, attribute, g, s.min_respondents) for g in (first, second)]
            if not all(sides):
                continue
            (a, full_a), (b, full_b) = sides
            diff = Estimate(a.estimate - b.estimate, np.hypot(a.se, b.se), a.classical - b.classical,
                            np.hypot(a.classical_se, b.classical_se), a.lam, a.rho, a.n + b.n, a.N + b.N)
            record = _fields(diff, full_a - full_b, s.alpha)[0]
            found.append({"target": q.names[0], "attribute": attribute, "groups": [first, second],
                          **{k: v for k, v in record.items() if k not in ("lambda", "rho")}})
    return found


def _design(q: Question, lab: np.ndarray, s: Settings) -> tuple[np.ndarray, list[str], dict[str, str]]:
    """Intercept plus one dummy per persona group with enough labelled respondents; the most common
    group of each attribute (and the thin ones) is the reference."""
    columns, reference = {"intercept": np.ones(len(q.y))}, {}
    for attribute in (a for a in ATTRIBUTES if a in q.groups):
        counts = pd.Series(q.groups[attribute][lab]).value_counts()
        kept = [g for g in counts.index if counts[g] >= s.min_respondents and g != UNKNOWN]
        if len(kept) < 2:
            continue
        reference[attribute] = kept[0]
        columns |= {f"{attribute}={g}": (q.groups[attribute] == g).astype(float) for g in kept[1:]}
    return np.column_stack(list(columns.values())), list(columns), reference


def _regression(q: Question, lab: np.ndarray, unl: np.ndarray, s: Settings) -> dict[str, Any] | None:
    """OLS of the mean code (a scale) or logistic of the first option (two options) on the groups."""
    family = "ols" if q.names[0] == MEAN else "logistic" if len(q.names) == 2 else None
    x, names, reference = _design(q, lab, s)
    if family is None or len(names) < 2:
        return None
    y, yhat, w = q.y[:, 0], q.yhat[:, 0], q.w
    try:
        est = ppi_regression(family, x[lab], y[lab], yhat[lab], x[unl], yhat[unl],
                             None if w is None else w[lab], None if w is None else w[unl])
        full = classical_fit(family, x, y, w)
    except np.linalg.LinAlgError:
        return None
    terms = [{"term": name, **fields} for name, fields in zip(names, _fields(est, full, s.alpha))]
    return {"family": family, "target": q.names[0], "reference": reference, "lambda": float(est.lam[0]),
            "terms": terms}


def _finite(average: Callable[[list[float]], Any], values: list[float]) -> float:
    """``np.mean`` or ``np.median`` of the finite values (NaN without any)."""
    finite = [v for v in values if np.isfinite(v)]
    return float(average(finite)) if finite else float("nan")


def _percentiles(values: np.ndarray | list[float], at: list[float]) -> list[float] | None:
    """Percentiles ``at`` of the finite values (None without any)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return [float(v) for v in np.percentile(finite, at)] if len(finite) else None


def _interval(values: np.ndarray | list[float], alpha: float) -> list[float] | None:
    """The central 1 - alpha range of values over repeated splits (None without any)."""
    return _percentiles(values, [50 * alpha, 100 - 50 * alpha])


Check = tuple[np.ndarray, list[np.ndarray], np.ndarray]  # a question's ``repeated.check_question``


def _question_check(q: Question, draws: list[tuple[np.ndarray, np.ndarray]], s: Settings) -> Check:
    """One question over the repeated i.i.d. draws, all at once (``repeated.check_question``)."""
    lab, unl = (draw_counts(q.row_of, len(q.y), [draw[i] for draw in draws]) for i in (0, 1))
    return check_question(q.y, q.yhat, q.w, lab, unl, q.full(), q.shares, s.min_respondents, s.alpha)


def repeated_check(questions: list[Question], people: int, n: int, rng: np.random.Generator,
                   s: Settings) -> tuple[dict[str, Check], list[float]]:
    """Every question's check (by id) over the same ``s.repeats`` draws, and each draw's median gain. Each
    question on a thread of its own: numpy's arithmetic runs outside the GIL, so two cores take ~half the
    time of one (a whole survey's 200 repeats x questions x thousands of respondents). The draws (i.i.d.,
    labelled and unlabelled of the split's sizes) are made first, as one loop made them."""
    draws = [(rng.integers(people, size=n), rng.integers(people, size=people - n)) for _ in range(s.repeats)]
    with ThreadPoolExecutor(THREADS) as pool:
        found = list(pool.map(lambda q: _question_check(q, draws, s), questions))
    medians = [_finite(np.median, [heads[r] for *_, heads in found]) for r in range(s.repeats)]  # NaN: none
    return {q.question_id: f for q, f in zip(questions, found, strict=True)}, medians


def question_record(q: Question, lab: np.ndarray, unl: np.ndarray, check: Check,
                    s: Settings) -> dict[str, Any]:
    """One question's estimates (every target; per country), gaps, regression and plan."""
    record: dict[str, Any] = {"question_id": q.question_id, "target": q.names[0], "respondents": len(q.y),
                              "labelled": len(lab), "no_model_answer": q.no_model_answer, "estimates": [],
                              "gaps": [], "regression": None, "plan": None}
    if len(lab) < s.min_respondents or len(unl) < 2:
        return {**record, "note": f"fewer than {s.min_respondents} labelled respondents"}
    est, full = q.estimate(lab, unl), q.full()
    covered, gains = check[0], np.array(check[1])
    done = len(gains)
    estimates = [{
        "target": name, "group": "all", **fields, "repeats": done,
        "coverage": float(covered[0, j] / done) if done else float("nan"),
        "classical_coverage": float(covered[1, j] / done) if done else float("nan"),
        "gain_spread": _interval(gains[:, j], s.alpha) if done else None}
        for j, (name, fields) in enumerate(zip(q.names, _fields(est, full, s.alpha, q.shares)))]
    return {**record, "estimates": estimates + _groups(q, lab, unl, s), "gaps": _gaps(q, lab, unl, s),
            "regression": _regression(q, lab, unl, s), "plan": s.plan(float(est.rho[0])),
            "warning": small_sample(len(lab))}


@dataclass(frozen=True)
class Split:
    """A domain's questions, its seeded labelled/unlabelled people and the repeated-split check."""

    people: int
    n: int
    questions: list[Question]
    labelled: np.ndarray
    unlabelled: np.ndarray
    checks: dict[str, Check]
    medians: list[float]  # each repeated split's median gain


def split_domain(domain: str, items: pd.DataFrame, s: Settings, headline: bool = False) -> Split:
    """``headline``: each question's first target only (the same numbers for it, in half the time)."""
    people = sorted(set(items["person_id"]))
    index = {p: i for i, p in enumerate(people)}
    n = int(s.labelled_of(domain, len(people)))
    built = (question(qid, frame, index) for qid, frame in items.groupby("question_id", sort=False))
    # a question at a time, and copies: views would keep every question's whole targets alive at once;
    # the headline reads no group
    questions = [replace(q, names=q.names[:1], y=q.y[:, :1].copy(), yhat=q.yhat[:, :1].copy(), groups={})
                 for q in built] if headline else list(built)
    rng = np.random.default_rng(s.seed)
    order = rng.permutation(len(people))  # the labelled and unlabelled people: a seeded random split
    return Split(len(people), n, questions, np.sort(order[:n]), np.sort(order[n:]),
                 *repeated_check(questions, len(people), n, rng, s))


def estimate_domain(domain: str, items: pd.DataFrame, s: Settings) -> dict[str, Any]:
    """Every question of one domain, its repeated-split check and (with a budget) its plan."""
    sp = split_domain(domain, items, s)
    records = [question_record(q, q.rows(sp.labelled), q.rows(sp.unlabelled), sp.checks[q.question_id], s)
               for q in sp.questions]
    heads = [r["estimates"][0] for r in records if r["estimates"]]
    rho = float(np.median([h["rho"] for h in heads])) if heads else float("nan")
    spread = _percentiles([h["gain"] for h in heads], [50, 25, 75]) or [math.nan] * 3  # median, quartiles
    return {"domain": domain, "respondents": sp.people, "labelled": sp.n, "questions": records,
            "gain": {**dict(zip(("median", "q25", "q75"), spread)), "questions": len(heads),
                     "median_spread": _interval(sp.medians, s.alpha)}, "warning": small_sample(sp.n),
            "coverage": _finite(np.mean, [h["coverage"] for h in heads]),
            "classical_coverage": _finite(np.mean, [h["classical_coverage"] for h in heads]),
            "plan": {"rho": rho, **plan} if heads and (plan := s.plan(rho)) else None}


def estimate_items(items: pd.DataFrame, settings: Settings) -> dict[str, Any]:
    """The estimates record of a run's items (``run_items``): plain, JSON-ready dicts. Every
    domain's labelled size is checked before any is estimated."""
    domains = {str(name): frame for name, frame in items.groupby("domain", sort=False)}
    sizes = {name: settings.labelled_of(name, f["person_id"].nunique()) for name, f in domains.items()}
    left_out = [why for why in sizes.values() if isinstance(why, str)]
    if len(left_out) == len(domains):
        raise ConfigError(f"--fraction {settings.fraction or DEFAULT_FRACTION}: {left_out[0]}")
    return {"run": items.attrs.get("run"), "model": items.attrs.get("model"), "settings": asdict(settings),
            "notes": [*items.attrs.get("notes", []), *left_out],
            "domains": [estimate_domain(name, frame, settings) for name, frame in domains.items()
                        if not isinstance(sizes[name], str)]}


def gain_record(domain: str, items: pd.DataFrame, s: Settings = RUN_SETTINGS) -> dict[str, Any]:
    """What the score stage records for the report: per question the headline gain and PPI correlation at
    the default labelled fraction, the median gain and its CI over splits; too few people: why, only."""
    size = s.labelled_of(domain, items["person_id"].nunique())
    about = {"fraction": s.fraction or DEFAULT_FRACTION, "seed": s.seed, "repeats": s.repeats}
    if isinstance(size, str):
        return {**about, "note": size}
    sp, found = split_domain(domain, items, s, headline=True), {}
    for q in sp.questions:
        lab, unl = q.rows(sp.labelled), q.rows(sp.unlabelled)
        est = q.estimate(lab, unl) if len(lab) >= s.min_respondents and len(unl) >= 2 else None
        found[q.question_id] = {"target": q.names[0], "labelled": len(lab),  # NaN: too few labelled
                                "gain": float(est.gain[0]) if est else math.nan,
                                "rho": float(est.rho[0]) if est else math.nan}
    return {**about, "respondents": sp.people, "labelled": sp.n, "questions": found,
            "median_gain": _finite(np.median, [g["gain"] for g in found.values()]),
            "median_gain_ci": _interval(sp.medians, s.alpha),  # a spread over splits: docs/estimates.md
            "warning": small_sample(sp.n)}
