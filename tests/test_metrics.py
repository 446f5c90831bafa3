"""Metrics against hand-worked numbers and an independent computation (sklearn, brute force)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from sklearn.metrics import f1_score

from socbench.metrics.baselines import (
    BY_COUNTRY_QUESTION,
    baselines,
    item_baselines,
    majority_item_scores,
    margin_over_best,
)
from socbench.metrics.classification import (
    accuracy,
    parse_failure_rate,
    per_question_macro_f1,
    pooled_labels,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.grouped import group_rows
from socbench.types import ScoredItem

CODES3 = ("1", "2", "3")


def si(pid: int, q: str, true: str, pred: str | None, offered=CODES3, country: str | None = "DE",
       parse_error: str | None = None) -> ScoredItem:
    if parse_error is None and (pred is None or pred not in offered):
        parse_error = "no code" if pred is None else "answer not an offered code"
    return ScoredItem(pid, q, country, true, pred, parse_error is None and pred == true, parse_error,
                      False, tuple(offered))


# Two questions; one missing answer (q1) and one unoffered answer "9" (q2).
MIXED = [
    si(1, "q1", "1", "1"), si(2, "q1", "2", "1"), si(3, "q1", "1", None),
    si(1, "q2", "1", "2"), si(2, "q2", "2", "2"), si(3, "q2", "3", "9"),
]


def test_accuracy_counts_each_item_once() -> None:
    assert accuracy(MIXED) == pytest.approx(2 / 6)
    assert accuracy(MIXED[:2]) == pytest.approx(1 / 2)
    assert math.isnan(accuracy([]))


def test_parse_failure_rate() -> None:
    assert parse_failure_rate(MIXED) == pytest.approx(2 / 6)


def test_seed_pooled_macro_and_micro_with_invalid_answers() -> None:
    # Pooled y_true = 1,2,1,1,2,3; y_pred = 1,1,inv,2,2,inv. Labels = true codes {1,2,3}.
    # class 1: P=1/2 R=1/3 F1=0.4; class 2: P=1/2 R=1/2 F1=0.5; class 3: F1=0 -> macro 0.3.
    assert seed_macro_f1(MIXED) == pytest.approx(0.3)
    y_true = ["1", "2", "1", "1", "2", "3"]
    y_pred = ["1", "1", "invalid", "2", "2", "invalid"]
    assert seed_macro_f1(MIXED) == pytest.approx(
        f1_score(y_true, y_pred, labels=["1", "2", "3"], average="macro", zero_division=0))
    # "invalid" is not a class: with it as one, macro would be (0.4 + 0.5 + 0 + 0) / 4.
    assert seed_macro_f1(MIXED) != pytest.approx(0.225)
    # Pooled micro-F1 equals accuracy (the seed's known defect, kept for comparability).
    assert seed_micro_f1(MIXED) == pytest.approx(2 / 6) == pytest.approx(accuracy(MIXED))
    assert seed_micro_f1(MIXED) == pytest.approx(f1_score(y_true, y_pred, average="micro"))


def test_seed_macro_f1_is_scikit_learns_bit_for_bit() -> None:
    """From counts, without importing scikit-learn (seconds, once per process): the same float."""
    rng = random.Random(2)
    codes = ("1", "2", "3", "4", "5")
    items = [si(pid, f"q{pid % 7}", rng.choice(codes), rng.choice([*codes, "9", None]), codes)
             for pid in range(3000)]
    y_true, y_pred = pooled_labels(items)
    assert seed_macro_f1(items) == f1_score(y_true, y_pred, labels=sorted(set(y_true)), average="macro",
                                            zero_division=0)


def test_per_question_macro_f1_by_hand() -> None:
    # q1: true 1,2,1 pred 1,1,inv; labels {1,2} (3 neither held nor predicted):
    #     class 1 P=1/2 R=1/2 F1=1/2, class 2 F1=0 -> 1/4.
    # q2: true 1,2,3 pred 2,2,inv; labels {1,2,3}: class 2 P=1/2 R=1 F1=2/3 -> 2/9.
    assert per_question_macro_f1(MIXED) == pytest.approx((1 / 4 + 2 / 9) / 2)
    q1 = f1_score(["1", "2", "1"], ["1", "1", "invalid"], labels=["1", "2"], average="macro", zero_division=0)
    q2 = f1_score(["1", "2", "3"], ["2", "2", "invalid"], labels=["1", "2", "3"], average="macro",
                  zero_division=0)
    assert per_question_macro_f1(MIXED) == pytest.approx((q1 + q2) / 2)


def test_per_question_macro_f1_perfect_answerer_scores_one() -> None:
    perfect = [si(1, "q1", "1", "1"), si(2, "q1", "2", "2"), si(1, "q2", "3", "3")]  # "3" unused in q1
    assert per_question_macro_f1(perfect) == pytest.approx(1.0)
    assert seed_macro_f1(perfect) == pytest.approx(1.0)


# Baselines. A: k=3, codes 1,1,1,2,3 (DE,DE,FR,FR,FR). B: k=5, codes 1,1,2,3 (a three-way
# tie for each "1" item). C: k=2, one respondent (falls back to 1/k).
K5 = ("1", "2", "3", "4", "5")
BASE = [
    si(1, "A", "1", "1", country="DE"), si(2, "A", "1", "1", country="DE"),
    si(3, "A", "1", "1", country="FR"), si(4, "A", "2", "1", country="FR"),
    si(5, "A", "3", "1", country="FR"),
    si(1, "B", "1", "1", K5), si(2, "B", "1", "1", K5), si(3, "B", "2", "1", K5), si(4, "B", "3", "1", K5),
    si(5, "C", "1", "1", ("1", "2"), country="FR"),
]


def test_uniform_baseline_by_hand() -> None:
    assert item_baselines(BASE)["uniform"].mean() == pytest.approx((5 / 3 + 4 / 5 + 1 / 2) / 10)


def test_majority_by_question_leave_one_out_by_hand() -> None:
    # A: each "1" sees {1:2,2:1,3:1} -> right; "2" and "3" see mode 1 -> wrong: 3.
    # B: each "1" sees {1:1,2:1,3:1}, a 3-way tie -> 1/3 each; "2","3" see mode 1: 2/3.
    # C: nobody else -> 1/k = 1/2.
    scores = majority_item_scores(BASE)
    assert list(scores) == pytest.approx([1, 1, 1, 0, 0, 1 / 3, 1 / 3, 0, 0, 1 / 2])
    assert majority_item_scores(BASE).mean() == pytest.approx((3 + 2 / 3 + 1 / 2) / 10)


def test_majority_by_country_and_question_by_hand() -> None:
    # A/DE {1,1}: both right (2). A/FR {1,2,3}: each sees a tie without its code (0).
    # B (all DE) as before: 2/3. C/FR alone: 1/2.
    assert majority_item_scores(BASE, BY_COUNTRY_QUESTION).mean() == pytest.approx((2 + 2 / 3 + 1 / 2) / 10)


def _brute_force_majority(items: list[ScoredItem], by: tuple[str, ...]) -> float:
    total = 0.0
    for item in items:
        group = [o for o in items if o is not item and all(getattr(o, k) == getattr(item, k) for k in by)]
        if not group:
            total += 1 / len(item.offered_codes)
            continue
        counts = Counter(o.true_code for o in group)
        top = max(counts.values())
        modes = [code for code, n in counts.items() if n == top]
        total += (item.true_code in modes) / len(modes)
    return total / len(items)


@pytest.mark.parametrize("by", [("question_id",), BY_COUNTRY_QUESTION])
def test_majority_matches_brute_force_on_random_items(by: tuple[str, ...]) -> None:
    rng = random.Random(7)
    items = [si(p, f"q{q}", rng.choice("1123"), "1", ("1", "2", "3"), country=rng.choice(["DE", "FR", None]))
             for p in range(40) for q in range(6) if rng.random() < 0.8]
    assert majority_item_scores(items, by).mean() == pytest.approx(_brute_force_majority(items, by))


def test_baselines_and_margin() -> None:
    values = baselines(BASE)
    assert set(values) == {"uniform", "majority_question", "majority_country_question"}
    assert values["majority_question"] == pytest.approx(0.41666667)
    assert margin_over_best(0.5, values) == pytest.approx(0.5 - (3 + 2 / 3 + 1 / 2) / 10)
    assert math.isnan(margin_over_best(0.5, {}))


def test_grouped_per_country() -> None:
    items = [
        si(1, "q", "1", "1", country="DE"), si(2, "q", "2", "2", country="DE"),
        si(3, "q", "1", None, country="DE"), si(4, "q", "1", "2", country="FR"),
        si(5, "q", "3", "3", country=None),
    ]
    expected = item_baselines(items)
    rows = group_rows(items, "country_code", expected)
    assert {c: r["accuracy"] for c, r in rows.items()} == pytest.approx(
        {"DE": 2 / 3, "FR": 0.0, "unmapped": 1.0})
    assert {c: r["parse_failure_rate"] for c, r in rows.items()} == pytest.approx(
        {"DE": 1 / 3, "FR": 0.0, "unmapped": 0.0})
    assert list(group_rows(items, lambda i: i.person_id % 2, expected)) == ["0", "1"]
    de = rows["DE"]  # the baselines on the group's own items, and the margin over the strongest
    assert (de["n"], de["respondents"], de["baselines"]["uniform"]) == (3.0, 3, pytest.approx(1 / 3))
    assert de["margin_over_best_baseline"] == pytest.approx(2 / 3 - de["best_baseline_accuracy"])


def test_macro_f1_from_counts_is_sklearns_bit_for_bit() -> None:
    """The per-question fast path gives exactly f1_score(average="macro", zero_division=0)."""
    from socbench.metrics.classification import macro_f1_counts

    rng = random.Random(7)
    for _ in range(300):
        codes = [str(c) for c in range(1, rng.randint(2, 12))]
        n = rng.randint(1, 60)
        y_true = [rng.choice(codes) for _ in range(n)]
        y_pred = [rng.choice(codes + ["invalid"]) for _ in range(n)]
        labels = sorted(set(codes[:rng.randint(1, len(codes))]) & (set(y_true) | set(y_pred)))
        if not labels:
            continue
        expected = float(f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0))
        assert macro_f1_counts(y_true, y_pred, labels) == expected
