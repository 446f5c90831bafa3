"""Design weights in the population-level figures: weighted majority baselines (leave-one-out)
against a brute force, weighted distribution scores, and the report showing both side by side."""

from __future__ import annotations

import numpy as np
import pytest

from socbench.metrics.baselines import baselines, majority_item_scores
from socbench.metrics.distribution import distribution_scores, human_distribution
from socbench.report.markdown import domain_markdown
from socbench.scoring import summarize_domain
from socbench.types import ScoredItem


def _items(seed: int = 0, people: int = 30) -> list[ScoredItem]:
    rng = np.random.default_rng(seed)
    return [
        ScoredItem(
            person_id=p,
            question_id=f"q{q}",
            country_code=str(rng.choice(["A", "B"])),
            true_code=str(rng.integers(1, 4)),
            predicted_code=str(rng.integers(1, 4)),
            correct=False,
            parse_error=None,
            country_specific=False,
            offered_codes=("1", "2", "3"),
        )
        for p in range(people)
        for q in range(3)
    ]


def _brute_force(items: list[ScoredItem], weights: dict[int, float], by: tuple[str, ...]) -> np.ndarray:
    scores = []
    for item in items:
        group = [o for o in items if all(getattr(o, k) == getattr(item, k) for k in by) and o is not item]
        if not group:
            scores.append(1 / len(item.offered_codes))
            continue
        totals: dict[str, float] = {}
        for other in group:
            totals[other.true_code] = totals.get(other.true_code, 0.0) + weights[other.person_id]
        best = max(totals.values())
        top = [code for code, total in totals.items() if np.isclose(total, best)]
        scores.append(1 / len(top) if item.true_code in top else 0.0)
    return np.array(scores)


@pytest.mark.parametrize("by", [("question_id",), ("country_code", "question_id")])
def test_weighted_majority_equals_a_brute_force(by: tuple[str, ...]) -> None:
    items = _items()
    rng = np.random.default_rng(1)
    weights = {p: float(rng.uniform(0.2, 3.0)) for p in range(30)}
    assert majority_item_scores(items, by, weights) == pytest.approx(
        _brute_force(items, weights, by)
    )
    equal = {p: 1.7 for p in range(30)}  # equal weights: the plain majority, ties included
    assert majority_item_scores(items, by, equal) == pytest.approx(majority_item_scores(items, by))


def test_weighted_distribution_and_report_side_by_side() -> None:
    items = _items(people=40)
    weights = {p: (3.0 if p % 2 else 1.0) for p in range(40)}
    human = human_distribution(items[: 3 * 40 : 3], ("1", "2", "3"), weights)
    manual = np.array([sum(weights[i.person_id] for i in items[::3] if i.true_code == c) for c in "123"])
    assert human == pytest.approx(manual / manual.sum())
    same = distribution_scores(items, 10, {p: 2.0 for p in range(40)})["question"]
    assert same["weighted_js"] == pytest.approx(same["js"])
    assert "weighted_js" not in distribution_scores(items, 10)["question"]
    result = summarize_domain(1, "Demo", "m", [], items, {}, 40, weights=weights)
    assert {"majority_question_weighted", "majority_country_question_weighted"} <= set(result.baselines)
    assert set(baselines(items)) == {"uniform", "majority_question", "majority_country_question"}
    assert "(weighted " in domain_markdown(result)
