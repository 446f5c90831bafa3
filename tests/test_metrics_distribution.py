"""Distribution metrics against hand-worked Wasserstein and Jensen-Shannon numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from socbench.metrics.distribution import (
    distribution_scores,
    headline_level,
    human_distribution,
    js_score,
    model_distribution,
    wasserstein_score,
)
from socbench.types import ScoredItem

CODES4 = ("1", "2", "3", "4")


def si(pid: int, true: str, pred: str | None, q: str = "V5", country: str | None = "DE",
       dist: dict[str, float] | None = None, offered=CODES4) -> ScoredItem:
    error = None if pred in offered else "no code"
    return ScoredItem(pid, q, country, true, pred, error is None and pred == true, error, False,
                      tuple(offered), dist)


def test_wasserstein_worked_by_hand() -> None:
    # Positions 0..3 in offered order. human = [.5, 0, 0, .5], model = [0, .5, .5, 0].
    # CDFs at positions 0,1,2: human .5 .5 .5; model 0 .5 1. W1 = |.5-0| + |.5-.5| + |.5-1| = 1.0
    # (move .5 from 0 to 1 and .5 from 3 to 2). Normalised by k-1 = 3 -> 1/3; score 2/3.
    human, model = np.array([.5, 0, 0, .5]), np.array([0, .5, .5, 0])
    assert wasserstein_score(model, human) == pytest.approx(2 / 3)
    # All mass at opposite ends: W1 = 3 = k-1 -> score 0; identical -> 1.
    assert wasserstein_score(np.array([1, 0, 0, 0.]), np.array([0, 0, 0, 1.])) == pytest.approx(0.0)
    assert wasserstein_score(human, human) == pytest.approx(1.0)
    # Uniform vs human: CDFs .25 .5 .75 vs .5 .5 .5 -> W1 = .25 + 0 + .25 = .5; score 1 - .5/3.
    assert wasserstein_score(np.full(4, .25), human) == pytest.approx(1 - 0.5 / 3)
    assert math.isnan(wasserstein_score(np.array([1.0]), np.array([1.0])))


def test_js_worked_by_hand() -> None:
    # p = [1, 0], q = [.5, .5], m = [.75, .25].
    # KL(p||m) = log2(1/.75); KL(q||m) = .5 log2(.5/.75) + .5 log2(.5/.25); JSD = mean of the two.
    jsd = 0.5 * (math.log2(1 / 0.75) + 0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25))
    assert jsd == pytest.approx(0.311278, abs=1e-6)
    assert js_score(np.array([1.0, 0.0]), np.array([0.5, 0.5])) == pytest.approx(1 - math.sqrt(jsd))
    assert js_score(np.array([0.3, 0.7]), np.array([0.3, 0.7])) == pytest.approx(1.0)
    assert js_score(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(0.0)


def test_model_distribution_from_answers_and_from_logprobs() -> None:
    answers = [si(1, "1", "2"), si(2, "1", "2"), si(3, "4", "3"), si(4, "4", None)]  # one failure left out
    assert model_distribution(answers, CODES4) == pytest.approx([0, 2 / 3, 1 / 3, 0])
    assert human_distribution(answers, CODES4) == pytest.approx([.5, 0, 0, .5])
    logprobs = [si(1, "1", "1", dist={"1": .6, "2": .4}), si(2, "2", None, dist={"3": 1.0}),
                si(3, "1", "1", dist={"1": .2, "9": .8})]  # an unoffered code is dropped, then renormalised
    assert model_distribution(logprobs, CODES4) == pytest.approx([(.6 + 0 + 1) / 3, .4 / 3, 1 / 3, 0])
    assert model_distribution([si(1, "1", None)], CODES4) is None


def _group(country: str, n: int, q: str = "V5", start: int = 0) -> list[ScoredItem]:
    """Humans half "1", half "4"; the model answers "2" for the first half and "3" for the rest."""
    half = n // 2
    return [si(start + i, "1" if i < half else "4", "2" if i < half else "3", q, country) for i in range(n)]


def test_distribution_scores_by_country_question_with_minimum() -> None:
    items = _group("DE", 10) + _group("JP", 9, start=100)  # JP is below the minimum of 10
    scores = distribution_scores(items, min_respondents=10)
    cq = scores["country_question"]
    assert cq["groups"] == 1 and cq["min_respondents"] == 10
    assert cq["wasserstein"] == pytest.approx(2 / 3)  # the hand-worked case above
    assert cq["uniform_wasserstein"] == pytest.approx(1 - 0.5 / 3)
    assert cq["js"] == pytest.approx(js_score(np.array([0, .5, .5, 0]), np.array([.5, 0, 0, .5])))
    # Pooled over countries: 19 respondents, one group; JP's 4-5 split moves both distributions equally.
    assert scores["question"]["groups"] == 1
    assert headline_level(scores) == "country_question"
    loose = distribution_scores(items, min_respondents=9)["country_question"]
    assert loose["groups"] == 2


def test_groups_average_unweighted_and_level_fallback() -> None:
    same = [si(i, "1", "1", "V6", "DE") for i in range(12)]  # perfect: both scores 1
    items = _group("DE", 10) + same
    cq = distribution_scores(items)["country_question"]
    assert cq["groups"] == 2 and cq["wasserstein"] == pytest.approx((2 / 3 + 1) / 2)
    small = _group("DE", 6) + _group("JP", 6, start=100)  # no country group reaches 10; the question does
    scores = distribution_scores(small)
    assert scores["country_question"]["groups"] == 0 and math.isnan(scores["country_question"]["js"])
    assert scores["question"]["groups"] == 1 and headline_level(scores) == "question"


def test_group_without_answers_is_skipped_not_zero() -> None:
    items = [si(i, "1", None) for i in range(10)]
    cq = distribution_scores(items)["country_question"]
    assert cq["groups"] == 0 and cq["skipped_no_answers"] == 1 and math.isnan(cq["wasserstein"])
    with pytest.raises(ValueError):
        distribution_scores(items, min_respondents=0)


def test_distances_are_scipys_to_the_bit() -> None:
    """Issue 43: W1 and JS in scipy's arithmetic without its set-up give scipy's floats exactly."""
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(2)
    for k in (2, 3, 4, 5, 7, 11):
        for _ in range(30):
            model, human = rng.dirichlet(np.ones(k)), rng.integers(0, 4, k) / 1.0
            model[rng.integers(k)] = 0.0  # an option nobody chose
            human[0] += human.sum() == 0
            human /= human.sum()
            positions = np.arange(k, dtype=float)
            w1 = wasserstein_distance(positions, positions, u_weights=model, v_weights=human)
            assert wasserstein_score(model, human) == 1.0 - float(w1) / (k - 1)
            assert js_score(model, human) == 1.0 - float(jensenshannon(model, human, base=2))


def test_the_per_question_view_gives_the_same_distribution_scores() -> None:
    """The score stage takes the distribution scores from ``question_view``, out of the shares its alignment
    tests compare: the same floats as ``distribution_scores``, weighted or not, a group without answers
    skipped in both."""
    import json

    from socbench.metrics.ranking import question_view
    from socbench.types import Item

    scored = (_group("DE", 10) + _group("JP", 12, start=100) + _group("DE", 14, "V6", start=200)
              + [si(300 + i, "2", None, "V7") for i in range(11)])
    items = [Item(i.person_id, i.question_id, i.country_code, tuple((c, c) for c in i.offered_codes),
                  i.true_code, False) for i in scored]
    for weights in (None, {i.person_id: 1.0 + i.person_id % 3 for i in scored}):
        view = question_view(items, scored, {}, 10, weights)[2]
        assert json.dumps(view) == json.dumps(distribution_scores(scored, 10, weights))
        assert view["country_question"]["skipped_no_answers"] == 1
