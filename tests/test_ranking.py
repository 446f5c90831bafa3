"""Ranking alignment (issue 17): modal agreement, Kendall tau-b and its permutation test, per
question and per country, weighted where the survey has weights, in the metrics JSON."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from socbench.log.write import write_domain_files
from socbench.metrics.ranking import _round, _tau, mean_tau_p, modal_agreement, rank_tests
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Question, Respondent


def kendall_tau_b(model: np.ndarray, human: np.ndarray, axis: int = -1) -> np.ndarray:
    """Tau-b of ``model`` (rows, or one) against ``human`` in ``rank_tests``' arithmetic: scipy's
    ``permutation_test`` statistic, for comparing nulls to the bit."""
    model, human = np.moveaxis(np.asarray(model, float), axis, -1), np.asarray(human, float)
    i, j = np.triu_indices(human.shape[-1], 1)
    sx, sy = np.sign(_round(model[..., i] - model[..., j])), np.sign(_round(human[i] - human[j]))
    return _tau(sx @ sy, np.count_nonzero(sx, axis=-1), np.count_nonzero(sy))


OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("4", "Strongly disagree"))


def test_tau_b_equals_scipy_with_ties_and_its_conventions() -> None:
    rng = np.random.default_rng(3)
    for k in (2, 3, 4, 5, 7, 11):
        for _ in range(20):
            model = rng.integers(0, 4, k) / 4  # many ties, as shares of few respondents have
            human = rng.integers(0, 5, k) / 5
            expected = kendalltau(model, human).statistic
            got = rank_tests([(model, human, 0)])[0].kendall_tau
            if np.ptp(human) == 0 or np.ptp(model) == 0:
                assert math.isnan(got) and math.isnan(expected)  # a constant ranking has no order
            else:
                assert got == pytest.approx(expected, abs=1e-12)
    rows = rng.random((6, 5))
    assert np.allclose([t.kendall_tau for t in rank_tests([(r, rows[0], 0) for r in rows])],
                       [kendalltau(r, rows[0]).statistic for r in rows])


def test_modal_agreement_splits_ties_like_random_tie_breaks() -> None:
    assert modal_agreement(np.array([0.6, 0.4, 0]), np.array([0.5, 0.3, 0.2])) == 1.0
    assert modal_agreement(np.array([0.1, 0.9, 0]), np.array([0.5, 0.3, 0.2])) == 0.0
    assert modal_agreement(np.array([0.5, 0.5, 0]), np.array([0.5, 0.3, 0.2])) == 0.5  # model tied
    assert modal_agreement(np.full(4, 0.25), np.array([0.4, 0.3, 0.2, 0.1])) == 0.25  # uniform: 1/k
    assert modal_agreement(np.array([0.1 + 0.2, 0.3, 0.4]), np.array([0.3, 0.3, 0.4])) == 1.0


def test_permutation_p_value_is_the_exact_share_of_orders_at_least_as_aligned() -> None:
    model, human = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.4, 0.35, 0.05, 0.2])
    test = rank_tests([(model, human, 0)])[0]
    by_hand = [float(kendall_tau_b(model[list(p)], human)) for p in itertools.permutations(range(4))]
    assert test.kendall_tau == pytest.approx(kendalltau(model, human).statistic)
    assert test.p_value == pytest.approx(np.mean(np.array(by_hand) >= test.kendall_tau - 1e-12))
    assert sorted(test.null) == pytest.approx(sorted(by_hand))
    # a constant ranking: no order, no test
    assert math.isnan(rank_tests([(np.full(4, 0.25), human, 0)])[0].p_value)


def test_permutation_test_is_scipys_to_the_bit() -> None:
    """Issue 43: the test without scipy's per-call set-up draws the same orders: the same null, in order
    (the level's test draws from it by index), and the same p-value, exact (k <= 7) and resampled."""
    from scipy.stats import permutation_test

    rng = np.random.default_rng(5)
    for k in (2, 3, 4, 5, 7, 8, 11, 17):  # 17: the pairs' positions past one byte
        for seed in range(3):
            model, human = rng.integers(0, 6, k) / 6, rng.dirichlet(np.ones(k))  # ties on the model's side
            if np.ptp(model) == 0:
                continue
            expected = permutation_test((model,), lambda x, axis=-1, h=human: kendall_tau_b(x, h, axis),
                                        permutation_type="pairings", vectorized=True, alternative="greater",
                                        n_resamples=np.inf if k <= 7 else 9_999,
                                        rng=np.random.default_rng(seed))
            got = rank_tests([(model, human, seed)])[0]
            assert got.p_value == expected.pvalue
            assert np.array_equal(got.null, expected.null_distribution)


def test_groups_tested_together_equal_each_tested_alone() -> None:
    """Issue 43: a level's groups are tested in batches of one size; each test is the one-group test's, to
    the bit, whatever its neighbours (sizes mixed, constant rankings among them, resampled ones, seeded)."""
    rng = np.random.default_rng(9)
    groups = [(rng.integers(0, 4, k) / 4 if n % 5 == 0 else rng.dirichlet(np.ones(k)),
               rng.dirichlet(np.ones(k)), n) for n, k in enumerate(rng.choice([2, 3, 4, 7, 8], 70))]
    groups.append((np.full(4, 0.25), rng.dirichlet(np.ones(4)), 70))
    for together, (model, human, seed) in zip(rank_tests(groups), groups, strict=True):
        alone = rank_tests([(model, human, seed)])[0]
        assert (together.modal_agreement, together.p_value) == (alone.modal_agreement, alone.p_value) or \
            math.isnan(alone.p_value) and math.isnan(together.p_value)
        assert np.array_equal(together.null, alone.null, equal_nan=True)


def test_mean_tau_test_finds_alignment_only_where_there_is_some() -> None:
    rng = np.random.default_rng(0)
    humans = [rng.dirichlet(np.ones(5)) for _ in range(30)]
    aligned = rank_tests([(h + rng.normal(0, 0.02, 5), h, 0) for h in humans])
    unrelated = rank_tests([(rng.dirichlet(np.ones(5)), h, 0) for h in humans])
    assert mean_tau_p([t.kendall_tau for t in aligned], [t.null for t in aligned]) < 0.001
    assert mean_tau_p([t.kendall_tau for t in unrelated], [t.null for t in unrelated]) > 0.01


def domain(answer, weights: bool = False) -> tuple[DomainData, list[Item], dict[str, Extraction]]:
    """Two countries x 15 respondents x 2 questions; ``answer(item)`` is the model's code."""
    rng = random.Random(4)
    people, items, extractions = [], [], {}
    for i in range(30):
        country = ("DE", "JP")[i % 2]
        people.append(Respondent(i, country, country, {}, {}, weight=(1.0 + i % 3) if weights else None))
        for qid, probs in (("V1", (0.6, 0.2, 0.1, 0.1)), ("V2", (0.1, 0.2, 0.3, 0.4))):
            true = rng.choices("1234", probs)[0]
            item = Item(i, qid, country, OPTS, true, False)
            items.append(item)
            extractions[item.item_id] = Extraction(answer(item))
    questions = (Question("V1", "Do you agree?", dict(OPTS)), Question("V2", "And now?", dict(OPTS)))
    return DomainData(1, "Citizenship", questions, tuple(people), {}, "synthetic"), items, extractions


def test_always_one_model_per_question_and_country(tmp_path: Path) -> None:
    data, items, extractions = domain(lambda item: "1")
    result = score_domain(data, items, extractions, model="m").result
    v1, v2 = result.questions["V1"], result.questions["V2"]
    assert v1["text"] == "Do you agree?" and v1["options"][0] == ["1", "Agree"]
    assert v1["model"] == {"1": 1.0, "2": 0.0, "3": 0.0, "4": 0.0}  # shows at once
    truth = [i.true_code for i in items if i.question_id == "V1"]
    assert v1["human"]["1"] == pytest.approx(truth.count("1") / 30, abs=1e-6)
    assert v1["modal_agreement"] == 1.0 and v2["modal_agreement"] == 0.0  # people's mode is 1 only in V1
    assert set(v1["countries"]) == {"DE", "JP"} and v1["countries"]["DE"]["respondents"] == 15
    summary = result.alignment["question"]
    assert summary["groups"] == 2 and summary["modal_agreement"] == 0.5
    assert summary["uniform_modal_agreement"] == 0.25 and summary["uniform_kendall_tau"] == 0.0
    assert summary["kendall_tau"] == pytest.approx(np.mean([v1["kendall_tau"], v2["kendall_tau"]]))
    assert result.alignment["country_question"]["groups"] == 4
    scored = score_domain(data, items, extractions, model="m").items
    _, metrics_path = write_domain_files(tmp_path, result, scored)
    metrics = json.loads(metrics_path.read_text())
    assert metrics["alignment"]["question"]["modal_agreement"] == 0.5
    assert metrics["questions"]["V1"]["kendall_tau"] == pytest.approx(v1["kendall_tau"])
    assert "countries" not in metrics["questions"]["V1"]  # per country: in the detailed file


def test_weighted_shares_where_the_survey_has_weights() -> None:
    data, items, extractions = domain(lambda item: item.true_code, weights=True)
    result = score_domain(data, items, extractions, model="m").result
    view = result.questions["V1"]
    weights = {p.person_id: p.weight for p in data.respondents}
    v1 = [i for i in items if i.question_id == "V1"]
    share = sum(weights[i.person_id] for i in v1 if i.true_code == "1") / sum(weights[i.person_id]
                                                                            for i in v1)
    assert view["weighted_human"]["1"] == pytest.approx(share, abs=1e-6)
    assert view["weighted_model"] == view["weighted_human"]  # a perfect model matches people's shares
    assert view["weighted_kendall_tau"] == 1.0 and view["weighted_modal_agreement"] == 1.0
    assert result.alignment["question"]["weighted_kendall_tau"] == 1.0


def test_too_few_respondents_get_shares_but_no_alignment() -> None:
    data, items, extractions = domain(lambda item: "2")
    few = [i for i in items if i.person_id < 6]
    result = score_domain(data, few, {i.item_id: extractions[i.item_id] for i in few}, model="m").result
    view = result.questions["V1"]
    assert view["respondents"] == 6 and not view["enough_respondents"]
    assert math.isnan(view["kendall_tau"]) and view["model"]["2"] == 1.0
    assert result.alignment["question"]["groups"] == 0 and view["countries"] == {}


def test_one_answer_to_everything_is_not_a_constant_ranking() -> None:
    """Answering 1 to every question ranks option 1 first and ties the rest: tau-b 2/sqrt(6) = 0.816
    with three options people rank 1 > 2 > 3 (docs/results.md); equal shares (uniform answers) are a
    constant ranking: tau undefined, no test, left out of the mean."""
    human = np.array([0.5, 0.3, 0.2])
    top = rank_tests([(np.array([1.0, 0.0, 0.0]), human, 0)])[0]
    assert top.kendall_tau == pytest.approx(2 / math.sqrt(6))
    flat = rank_tests([(np.full(3, 1 / 3), human, 0)])[0]
    assert math.isnan(flat.kendall_tau) and math.isnan(flat.p_value)
