"""Ranking alignment: does the model order a question's options as people do? Accuracy and distances can look
fine while the model misses people's favourite. Per group (a question, or a (country, question) with enough
respondents), on option shares as ``metrics.distribution`` builds them: ``modal_agreement`` (ties: the chance
that random tie-breaks agree; uniform answers score 1/k); ``kendall_tau``, tau-b of the shares (NaN for a
constant ranking such as uniform answers, left out of the mean; one answer to everything ranks that option
first, so read it beside modal agreement); ``kendall_tau_p``, a one-sided permutation test (exact up to
``EXACT_MAX_OPTIONS`` options), and per level the test of the mean tau: with k = 4 options one question's
p is at best 1/24, so read the level's. ``question_view``: the per-question view (people's and the model's
shares, accuracy, alignment, per country where asked in several) the report shows."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import permutations
from typing import Any

import numpy as np

from socbench.metrics.baselines import UNMAPPED
from socbench.metrics.distribution import (
    DEFAULT_MIN_RESPONDENTS,
    Shares,
    Weights,
    distance_scores,
    group_codes,
    group_shares,
    human_distribution,
    scorable_groups,
    shares_scores,
    split_groups,
    weightings,
)
from socbench.metrics.distribution import (
    LEVELS as DISTRIBUTION_LEVELS,
)
from socbench.shuffle import order_seed
from socbench.types import Code, Item, ScoredItem

EXACT_MAX_OPTIONS = 7  # 7! = 5,040 orders enumerated; more options are resampled
PERMUTATION_RESAMPLES = 9_999
EXACT_BATCH = 32  # groups tested at once (7 options: ~14 MB of permuted signs, int32)
AGGREGATE_DRAWS = 4_000
SIGNIFICANCE = 0.05
ALIGNMENT_KEYS = ("modal_agreement", "kendall_tau", "kendall_tau_p")
LEVELS = {"question": ("question_id",), "country_question": ("country_code", "question_id")}


def _tau(agree: np.ndarray, tied_model: np.ndarray, tied_human: int) -> np.ndarray:
    """Tau-b from the sum of the pairs' sign products and each side's count of untied pairs: sums of
    -1, 0 and 1, exact in any order, so a product and counts give the sums' floats."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = agree / np.sqrt(tied_model * tied_human)
    return np.where((tied_human == 0) | (tied_model == 0), np.nan, tau)


def _round(values: np.ndarray) -> np.ndarray:
    return np.round(values, 12)  # shares from sums of floats: 0.1 + 0.2 must tie with 0.3


def modal_agreement(model: np.ndarray, human: np.ndarray) -> float:
    """``|M ∩ H| / (|M| |H|)`` over the modal options of each side (1/0 without ties)."""
    top_model = set(np.flatnonzero(_round(model) == _round(model).max()))
    top_human = set(np.flatnonzero(_round(human) == _round(human).max()))
    return len(top_model & top_human) / (len(top_model) * len(top_human))


@dataclass(frozen=True)
class RankTest:
    """Alignment of one group: the scores and tau's permutation null distribution."""

    modal_agreement: float
    kendall_tau: float
    p_value: float
    agree: np.ndarray  # each permutation's sum of pair-sign products, the smallest ints that hold it: every
    scale: float = 1.0  # group's null is held until its level's mean is tested (floats: 200 MB at 1,000)

    @property
    def null(self) -> np.ndarray:
        """Tau under permutations of the model's shares (``[tau]`` when tau is NaN): the same floats."""
        return self.agree / self.scale


def rank_tests(groups: Sequence[tuple[np.ndarray, np.ndarray, int]]) -> list[RankTest]:
    """Modal agreement, tau-b and its one-sided permutation p-value of each (model shares, human shares,
    seed): scipy's ``permutation_test`` (pairings,
    vectorized, one batch) without its per-call set-up, the same permutations, null and p-value to the bit.
    Groups of one size are tested together (a survey's thousands of small groups were each a dozen array
    calls: most of ranking's time); a resampled test draws its group's own seeded orders."""
    by_size: dict[int, list[int]] = {}
    for n, (_, human, _) in enumerate(groups):
        by_size.setdefault(len(human), []).append(n)
    tests: dict[int, RankTest] = {}
    for k, members in by_size.items():
        exact = k <= EXACT_MAX_OPTIONS
        batch = EXACT_BATCH if exact else 1
        for start in range(0, len(members), batch):
            chunk = members[start:start + batch]
            models, humans = (np.array([groups[n][side] for n in chunk], float) for side in (0, 1))
            pairs = _order_pairs(k) if exact else _seeded_pairs(k, groups[chunk[0]][2])
            tests.update(zip(chunk, _tested(models, humans, pairs, exact), strict=True))
    return [tests[n] for n in range(len(groups))]


def _tested(models: np.ndarray, humans: np.ndarray, pairs: np.ndarray, exact: bool) -> list[RankTest]:
    """Rows of shares of one size against their ``pairs`` (``_pairs_of`` the orders): tau-b of each row
    and of each permuted row. A permuted row's pair signs are looked up in its k x k table of signs (a
    permuted pair's difference is one of the table's: the same floats without the arithmetic), and its
    untied pairs are the row's own (permuting shares keeps the set of pairs)."""
    k = humans.shape[1]
    i, j = np.triu_indices(k, 1)
    sx, sy = np.sign(_round(models[:, i] - models[:, j])), np.sign(_round(humans[:, i] - humans[:, j]))
    untied_x, untied_y = np.count_nonzero(sx, axis=1), np.count_nonzero(sy, axis=1)
    observed = _tau(np.einsum("gp,gp->g", sx, sy), untied_x, untied_y)
    table = np.sign(_round(models[:, :, None] - models[:, None, :])).astype(np.int32).reshape(len(models), -1)
    agree = np.einsum("gp,gpo->go", sy.astype(np.int32), np.take(table, pairs, axis=1))  # -1/0/1 summed in
    # ints: 10x floats; ``take``: twice indexing's speed
    scales, held = np.sqrt(untied_x * untied_y).tolist(), np.min_scalar_type(-len(i))  # _tau's, row by row
    adjustment = 0 if exact else 1  # scipy's: a resampled test counts the observed ordering once
    tests = []
    for model, human, tau, sums, scale in zip(models, humans, observed.tolist(), agree, scales, strict=True):
        agreement = modal_agreement(model, human)
        if math.isnan(tau):  # a constant ranking on either side: no order, no test
            tests.append(RankTest(agreement, tau, math.nan, np.array([tau])))
            continue
        null = sums / scale
        count = np.count_nonzero(null >= tau - abs(np.finfo(float).eps * 100 * tau)) + adjustment
        p_value = float(np.clip(count / (len(null) + adjustment), 0.0, 1.0))
        tests.append(RankTest(agreement, tau, p_value, sums.astype(held), scale))
    return tests


@lru_cache(maxsize=8)
def _seeded_pairs(k: int, seed: int) -> np.ndarray:
    """A resampled test's orders as pairs (its weighted twin draws the same ones: drawn once)."""
    orders = np.tile(np.arange(k), (PERMUTATION_RESAMPLES, 1, 1))  # drawn as scipy draws them in one batch
    return _pairs_of(np.random.default_rng(seed).permuted(orders, axis=-1)[:, 0])


def _pairs_of(orders: np.ndarray) -> np.ndarray:
    """Where each order's pairs (i < j, tau-b's order) are in a flattened k x k table: pairs x orders
    (whole rows copied: picking columns of orders x k was the slow part)."""
    k = orders.shape[-1]
    i, j = np.triu_indices(k, 1)
    columns = orders.T.astype(np.min_scalar_type(k * k))  # small integers: a quarter of the memory
    return columns[i] * k + columns[j]


@cache
def _order_pairs(k: int) -> np.ndarray:
    """``_pairs_of`` every order of ``k`` options, in scipy's (``itertools.permutations``) order."""
    return _pairs_of(np.array(list(permutations(range(k))))).astype(np.intp)  # cast once, not per lookup


def mean_tau_p(taus: Sequence[float], nulls: Iterable[np.ndarray], seed: int = 0) -> float:
    """One-sided p-value of the mean tau over groups, each group permuted independently. The draws are summed
    group by group in order (``np.mean``'s floats), never held for a level's thousands of groups at once."""
    if not taus:
        return math.nan
    rng, total, count = np.random.default_rng(seed), np.zeros(AGGREGATE_DRAWS), 0
    for null in nulls:
        total += rng.choice(null, AGGREGATE_DRAWS)
        count += 1
    draws = total / count
    observed = float(np.mean(taus))
    return float((1 + np.sum(draws >= observed - 1e-12)) / (AGGREGATE_DRAWS + 1))


def _shares(codes: Sequence[Code], values: np.ndarray) -> dict[Code, float]:
    return {code: round(float(v), 6) for code, v in zip(codes, values, strict=True)}


Tested = dict[tuple, tuple[dict[str, object], dict[str, RankTest], Shares]]  # a level's groups


def group_record(items: Sequence[ScoredItem], weights: Weights | None, codes: tuple[Code, ...],
                 ) -> tuple[dict[str, object], Shares]:
    """One group's shares (``weighted_*`` too with ``weights``), its alignment NaN until tested, and the
    (model, human) shares to test by prefix ("" and "weighted_") where the model answered; ``codes``: the
    group's (``group_codes``)."""
    record: dict[str, object] = {
        "respondents": len({item.person_id for item in items}), "items": len(items),
        "accuracy": float(np.mean([item.correct for item in items])),
        "no_answer": float(np.mean([item.parse_error is not None for item in items])),
    }
    shares = group_shares(items, codes, weights)
    for prefix, w in weightings(weights):
        model, human = shares[prefix] if prefix in shares else (None, human_distribution(items, codes, w))
        record[f"{prefix}human"] = _shares(codes, human)
        record[f"{prefix}model"] = None if model is None else _shares(codes, model)
        record.update({f"{prefix}{key}": math.nan for key in ALIGNMENT_KEYS})
        if model is not None and not prefix and len(codes) >= 2:
            record.update(distance_scores(model, human))
    return record, shares


def level_groups(items: Sequence[ScoredItem], keys: Sequence[str], min_respondents: int,
                 weights: Weights | None = None, seed: int = 0) -> Tested:
    """Records of every group by ``keys`` with enough respondents and at least two codes, with their
    tests by prefix (for the level's aggregate test), all tested at once, and their shares."""
    records = {key: group_record(group, weights, codes)
               for key, (group, codes) in scorable_groups(items, keys, min_respondents).items()}
    wanted = [(key, prefix, pair) for key, (_, shares) in records.items() for prefix, pair in shares.items()]
    found: Tested = {key: (record, {}, shares) for key, (record, shares) in records.items()}
    tests = rank_tests([(*pair, order_seed(seed, "ranking", "\x1f".join(map(str, key))) % (2**32))
                        for key, _, pair in wanted])
    for (key, prefix, _), test in zip(wanted, tests, strict=True):
        record, by_prefix, _ = found[key]
        by_prefix[prefix] = test
        record.update(zip((f"{prefix}{key}" for key in ALIGNMENT_KEYS),
                          (test.modal_agreement, test.kendall_tau, test.p_value), strict=True))
    return found


def level_summary(groups: Tested, weighted: bool, min_respondents: int, seed: int = 0) -> dict[str, float]:
    """Means over a level's groups, the uniform floors beside them, and the aggregate test."""
    summary: dict[str, float] = {"groups": float(len(groups)), "min_respondents": float(min_respondents)}
    for prefix in ("", "weighted_")[:1 + weighted]:
        scored = [(record, t[prefix]) for record, t, _ in groups.values() if prefix in t]
        tests = [test for _, test in scored if not math.isnan(test.kendall_tau)]
        floors = [1.0 / len(record[f"{prefix}human"]) for record, _ in scored]  # type: ignore[arg-type]
        taus, nulls = [t.kendall_tau for t in tests], (t.null for t in tests)
        summary.update({
            f"{prefix}modal_agreement": _mean([test.modal_agreement for _, test in scored]),
            f"{prefix}uniform_modal_agreement": _mean(floors),
            f"{prefix}kendall_tau": _mean(taus),
            f"{prefix}uniform_kendall_tau": 0.0 if tests else math.nan,
            f"{prefix}kendall_tau_p": mean_tau_p(taus, nulls, seed),
            f"{prefix}significant_groups": _mean([t.p_value < SIGNIFICANCE for t in tests]),
            f"{prefix}tau_groups": float(len(tests)),
        })
    return summary


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def option_labels(items: Sequence[Item]) -> dict[str, dict[Code, str]]:
    """Per question, each code's label as most respondents saw it (survey-wide wording first)."""
    labels: dict[str, dict[Code, str]] = {}
    shown = dict.fromkeys((i.question_id, i.options) for i in sorted(items, key=lambda i: i.country_specific))
    for qid, options in shown:  # base options before overrides; each distinct wording read once
        known = labels.setdefault(qid, {})
        for code, label in options:
            known.setdefault(code, label)
    return labels


def question_view(items: Sequence[Item], scored: Sequence[ScoredItem], texts: Mapping[str, str] | None = None,
                  min_respondents: int = DEFAULT_MIN_RESPONDENTS, weights: Weights | None = None,
                  seed: int = 0) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, Any]],
                                          dict[str, dict[str, float]]]:
    """``({level: alignment summary}, {question id: view record}, {level: distribution scores})`` of one
    domain: the distribution scores (``distribution_scores``) from the shares the alignment tests compare,
    so each group's shares are found once."""
    labels = option_labels(items)
    levels = {name: level_groups(scored, keys, min_respondents, weights, seed)
              for name, keys in LEVELS.items()}
    summary = {name: level_summary(groups, weights is not None, min_respondents, seed)
               for name, groups in levels.items()}
    distribution = {name: shares_scores((shares for _, _, shares in levels[name].values()),
                                        weights is not None, min_respondents)
                    for name in DISTRIBUTION_LEVELS}  # in distribution_scores' order
    countries: dict[str, dict[str, Any]] = {}
    for (country, qid), (record, _, _) in levels["country_question"].items():
        countries.setdefault(qid, {})[UNMAPPED if country is None else str(country)] = record
    view = {}
    for (qid,), group in split_groups(scored, ("question_id",)).items():
        qualified, codes = levels["question"].get((qid,)), group_codes(group)
        record = qualified[0] if qualified else group_record(group, weights, codes)[0]  # alignment NaN
        asked_in = {item.country_code for item in group}
        view[qid] = {"text": (texts or {}).get(qid, ""),
                     "options": [[code, labels.get(qid, {}).get(code, "")] for code in codes],
                     "enough_respondents": qualified is not None, **record,
                     "countries": dict(sorted(countries.get(qid, {}).items())) if len(asked_in) > 1 else {}}
    return summary, view, distribution
