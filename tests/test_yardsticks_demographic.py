"""The demographic baseline: cross-fitting that never sees the respondent, and real data shapes."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from socbench.metrics import demographic
from socbench.metrics.classification import per_question_macro_f1
from socbench.metrics.demographic import (
    TOLERANCE,
    assign_folds,
    demographic_model,
    encode_attributes,
)
from socbench.types import ScoredItem

CODES = ("1", "2", "3", "4")


def item(pid: int, q: str, true: str, codes=CODES, country: str = "DE") -> ScoredItem:
    return ScoredItem(pid, q, country, true, None, False, "no answer", False, tuple(codes))


def domain(n: int = 120, seed: int = 1):
    """Answers to Q1 follow sex (women 1, men 3, with noise); Q2 is noise."""
    rng = np.random.default_rng(seed)
    people, items = {}, []
    for pid in range(n):
        sex = "Female" if pid % 2 else "Male"
        people[pid] = {"Sex of respondent": sex, "Age of respondent": f"{rng.integers(18, 90)} years",
                       "Region": f"region {rng.integers(0, 8)}"}
        lean = "1" if sex == "Female" else "3"
        items.append(item(pid, "Q1", lean if rng.random() < 0.8 else str(rng.integers(1, 5))))
        items.append(item(pid, "Q2", str(rng.integers(1, 5))))
    return items, people


def test_numeric_rule() -> None:
    def is_numeric(values: list[str | None]) -> bool:
        return encode_attributes({i: {"a": v} for i, v in enumerate(values)}).numeric == ("a",)

    assert is_numeric(["47 years", "30", None, "", "81 years old"])
    assert not is_numeric(["1", "2"])  # two levels: a category
    assert not is_numeric(["47", "no answer", "30"])
    encoded = encode_attributes({1: {"Age": "20", "Sex": "Male"}, 2: {"Age": "40", "Sex": "Female"},
                                 3: {"Age": "60"}, 4: {"Sex": "Male"}}, min_category_count=1)
    assert encoded.numeric == ("Age",) and encoded.categorical == ("Sex",)
    dense = encoded.matrix.toarray()
    # Age standardised (mean 40, population sd), missing at 0 with its flag; Sex one-hot (Female, Male), a
    # missing Sex no column: the reference level.
    sd = np.std([20, 40, 60])
    assert dense[:, 0] == pytest.approx([-20 / sd, 0, 20 / sd, 0]) and list(dense[:, 1]) == [0, 0, 0, 1]
    assert dense[:, 2:].tolist() == [[0, 1], [1, 0], [0, 0], [0, 1]]


def test_rare_categories_are_pooled() -> None:
    people = {pid: {"Job": "common" if pid < 20 else f"rare {pid}"} for pid in range(25)}
    assert encode_attributes(people, min_category_count=5).matrix.shape[1] == 2  # common + infrequent


def test_one_hot_is_scikit_learns_encoder() -> None:
    """The categorical block is ``OneHotEncoder(min_frequency=...)``'s, column for column (sorted categories,
    the rare pooled last), less the column of a missing value (missing, blank and absent: the reference
    level), built without the encoder."""
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(5)
    choices = ["a", "b", "B", "é", "", " ", "x y", "10", None]
    people = {pid * 3 + 7: {f"C{j}": rng.choice(choices[: 3 + j]) for j in range(6) if rng.random() > 0.1}
              | {"Rare": f"v{rng.zipf(1.5)}"} for pid in range(80)}
    encoded = encode_attributes(people, min_category_count=4)
    assert encoded.numeric == () and set(encoded.categorical) == {"C0", "C1", "C2", "C3", "C4", "C5", "Rare"}
    shown = [[demographic.MISSING if people[p].get(c) is None or not str(people[p].get(c)).strip()
              else people[p][c] for c in encoded.categorical] for p in encoded.person_ids]
    encoder = OneHotEncoder(min_frequency=4, handle_unknown="infrequent_if_exist")
    expected = encoder.fit_transform(shown)
    names = list(encoder.get_feature_names_out())
    missing = [n for n, name in enumerate(names) if name.endswith("_" + demographic.MISSING)]
    assert len(missing) == 6  # C0-C5 each have missing values, frequent enough for a column of their own
    expected = expected[:, [n for n in range(len(names)) if n not in missing]]
    assert encoded.matrix.shape == expected.shape and (encoded.matrix != expected).nnz == 0


def test_no_respondent_is_in_its_own_training_fold() -> None:
    items, people = domain()
    fits = []
    result = demographic_model(items, people, k=5, seed=3,
                               on_fit=lambda q, f, train, test: fits.append((q, f, set(train), set(test))))
    for _, fold, train, test in fits:
        assert not train & test
        assert all(result.folds[p] == fold for p in test) and all(result.folds[p] != fold for p in train)
    for qid in ("Q1", "Q2"):
        tested = [p for q, _, _, test in fits if q == qid for p in test]
        assert sorted(tested) == list(range(120))  # each respondent predicted exactly once
    assert result.folds == assign_folds(range(120), 5, 3)
    assert sorted(np.bincount(list(result.folds.values()))) == [24] * 5


@pytest.mark.parametrize("joint", [True, False])
def test_prediction_equals_an_independent_fit_on_the_other_folds(joint: bool, monkeypatch) -> None:
    """Per question, scikit-learn's own model; fitted jointly, the optimum of that same model (the joint stop
    is tighter: within 2e-3 of scikit-learn run to convergence)."""
    if not joint:
        monkeypatch.setattr(demographic, "JOINT_PARAMETERS", 0)
    items, people = domain()
    result = demographic_model(items, people, k=5, seed=3)
    encoded = encode_attributes(people)
    q1 = [i for i in items if i.question_id == "Q1"]
    train = [i for i in q1 if result.folds[i.person_id] != 0]
    test = [i for i in q1 if result.folds[i.person_id] == 0]
    reference = LogisticRegression(C=1.0, max_iter=10_000, tol=1e-10) if joint else \
        LogisticRegression(C=1.0, max_iter=100, tol=TOLERANCE)
    model = reference.fit(encoded.rows([i.person_id for i in train]), [i.true_code for i in train])
    expected = model.predict_proba(encoded.rows([i.person_id for i in test]))
    got = {(i.person_id, i.question_id): i for i in result.items}
    for row, it in zip(expected, test, strict=True):
        dist = got[(it.person_id, "Q1")].distribution
        assert [dist[c] for c in model.classes_] == pytest.approx(list(row), abs=2e-3 if joint else 1e-9)
    q1_scored = [i for i in result.items if i.question_id == "Q1"]
    assert result.per_question["Q1"]["accuracy"] == pytest.approx(np.mean([i.correct for i in q1_scored]))
    assert result.per_question["Q1"]["macro_f1"] == pytest.approx(per_question_macro_f1(q1_scored))
    assert result.per_question["Q1"]["accuracy"] > 0.6 > result.per_question["Q2"]["accuracy"]


def test_joint_fit_is_each_questions_optimum_binary_weighted_and_repeated() -> None:
    """The joint objective's parts are scikit-learn's, weights and binary (binomial) questions included,
    and a person twice in a question counts twice: run to convergence, each part equals its own fit."""
    from scipy import sparse

    rng = np.random.default_rng(0)
    matrix = sparse.csr_matrix(rng.normal(size=(40, 6)))
    fits = []
    for classes in (("1", "2"), ("1", "2", "3"), ("a", "b", "c", "d")):
        rows = np.concatenate([np.arange(30), [0, 1]])  # respondents 0 and 1 twice
        labels = rng.integers(0, len(classes), size=len(rows))
        weights = rng.uniform(0.5, 2, len(rows))
        fits.append(demographic._Fit(rows, labels, weights, np.arange(30, 40), classes))
    joint = demographic._joint_logistic(matrix, fits)
    for fit, probs in zip(fits, joint, strict=True):
        alone = LogisticRegression(C=1.0, max_iter=10_000, tol=1e-10).fit(
            matrix[fit.rows], fit.labels, sample_weight=fit.weights).predict_proba(matrix[fit.test])
        assert probs == pytest.approx(alone, abs=1e-3)


def test_a_capped_fit_learns_from_one_shared_seeded_sample() -> None:
    """Above ``cap`` each fit learns from ``cap`` of its training respondents, the first by one seeded order:
    the same people for every question of a fold (the joint fit stays that size), never a held-out one, the
    same on a rerun; at the training size (96 of 120 with 5 folds) nothing is sampled."""
    items, people = domain()
    fits: list[tuple[str, int, tuple, set]] = []
    capped = demographic_model(items, people, k=5, seed=3, cap=50,
                               on_fit=lambda q, f, train, test: fits.append((q, f, tuple(train), set(test))))
    assert all(len(train) == 50 and not set(train) & test for _, _, train, test in fits)
    for fold in range(5):
        assert len({train for _, f, train, _ in fits if f == fold}) == 1  # Q1 and Q2 share their sample
    assert [i.distribution for i in demographic_model(items, people, k=5, seed=3, cap=50).items] == \
        [i.distribution for i in capped.items]
    full = demographic_model(items, people, k=5, seed=3, cap=len(people))
    assert [i.distribution for i in demographic_model(items, people, k=5, seed=3, cap=96).items] == \
        [i.distribution for i in full.items]
    assert capped.per_question["Q1"]["accuracy"] > 0.6  # 50 people still learn the planted lean
    assert demographic.training_cap(70) == demographic.TRAINING_CAP < demographic.training_cap(1_660) == 6_640


def test_small_question_unseen_class_and_weights() -> None:
    items, people = domain(30)
    five = ("1", "2", "3", "4", "5")
    # Q3: 30 people, offered 5 codes; only respondent 0 answers "5" (a class in one fold only).
    items += [item(pid, "Q3", "5" if pid == 0 else str(1 + pid % 2), codes=five) for pid in range(30)]
    weights = {pid: 1.0 + pid % 3 for pid in range(30)}
    result = demographic_model(items, people, weights=weights)
    q3 = [i for i in result.items if i.question_id == "Q3"]
    assert all(set(i.distribution) == set(five) for i in q3)
    assert all(sum(i.distribution.values()) == pytest.approx(1) for i in q3)
    assert next(i for i in q3 if i.person_id == 0).distribution["5"] == 0.0  # never in its own training
    assert set(result.distributions["Q3"]) == set(five)


def test_fewer_respondents_than_folds_and_a_single_class() -> None:
    people = {pid: {"Sex": "Male" if pid % 2 else "Female"} for pid in range(3)}
    items = [item(pid, "Q1", "2") for pid in range(3)] + [item(0, "Q2", "1")]
    result = demographic_model(items, people, k=5)
    q1 = [i for i in result.items if i.question_id == "Q1"]
    assert all(i.predicted_code == "2" and i.correct for i in q1)  # training part has one class
    q2 = next(i for i in result.items if i.question_id == "Q2")
    assert q2.distribution == {c: 0.25 for c in CODES}  # nobody to learn from: uniform
    assert result.fallbacks == {"single_class_in_training": 3, "no_training_respondents": 1}


def test_no_attributes_predicts_the_training_shares() -> None:
    people = {pid: {} for pid in range(20)}
    items = [item(pid, "Q1", "1" if pid < 15 else "2") for pid in range(20)]
    result = demographic_model(items, people, k=2)
    assert all(i.predicted_code == "1" for i in result.items)
    assert result.metrics["accuracy"] == pytest.approx(15 / 20)


@pytest.mark.slow  # gradient boosting: joblib counts the cores with lscpu in a subprocess
def test_second_learner() -> None:
    items, people = domain(40)
    items = [i for i in items if i.question_id == "Q1"]
    result = demographic_model(items, people, learner="hgb")
    assert len(result.items) == len(items) and 0 <= result.metrics["accuracy"] <= 1


def test_answers_by_shared_codes_are_each_items_own(monkeypatch) -> None:
    """A question's items answered a code set at a time are what answering each item alone gives (its
    distribution over its own offered codes, renormalised; its most likely code, ties in survey order),
    also where respondents of one question see different codes."""
    from dataclasses import replace

    rng = np.random.default_rng(3)
    people = {p: {"Sex": "Female" if p % 2 else "Male", "Age": str(20 + p % 50)} for p in range(60)}
    shows = {p: ("1", "2", "3") if p % 3 else ("1", "2", "3", "4") for p in people}  # two code sets
    items = [ScoredItem(p, f"Q{q}", "DE", str(rng.integers(1, len(shows[p]) + 1)), None, False, "", False,
                        shows[p], None) for q in range(2) for p in people]

    def alone(q: demographic._Question) -> list[ScoredItem]:
        found = []
        for item, probs in zip(q.group, q.probs, strict=True):
            shown = {code: float(probs[q.codes.index(code)]) for code in item.offered_codes}
            total = sum(shown.values())
            dist = ({c: p / total for c, p in shown.items()} if total > 0
                    else {c: 1.0 / len(item.offered_codes) for c in item.offered_codes})
            best = next(code for code in item.offered_codes if dist[code] == max(dist.values()))
            found.append(replace(item, predicted_code=best, correct=best == item.true_code, parse_error=None,
                                 distribution=dist, engine_error=None, raw_reply=None))
        return found

    together = demographic_model(items, people).items
    monkeypatch.setattr(demographic, "_answered", alone)
    one_by_one = demographic_model(items, people).items
    assert together == one_by_one
    assert [list(i.distribution) for i in together] == [list(i.offered_codes) for i in together]


def test_a_lean_result_scores_as_the_full_one() -> None:
    """Kept without their distributions (a whole survey's were ~2 GB), the answered items give the figures the
    full items give: the summaries, SimBench from each question's rows made while its distributions were at
    hand, and the structure comparison's half (once made from a copy of every item with the classifier's
    code)."""
    from dataclasses import replace

    from socbench.metrics.simbench import simbench_of, simbench_rows, simbench_score
    from socbench.metrics.structure_difference import profile_resamples

    items, people = domain(n=240)
    items += [item(pid, "Q3", str(pid % 3 + 1), country="FR" if pid % 4 else "DE") for pid in people]
    items = [replace(i, groups={"sex": people[i.person_id]["Sex of respondent"]}) for i in items]
    fitted = demographic.fit_demographic(items, people, seed=2)
    parts: list = []
    lean = fitted.result(lean=True, each=lambda group: parts.append(simbench_rows(group, 10)))
    full = fitted.result()
    assert list(lean.items) == [replace(i, distribution=None) for i in full.items]
    assert (lean.metrics, lean.per_question, lean.distributions) == \
        (full.metrics, full.per_question, full.distributions)
    assert simbench_of(parts) == simbench_score(full.items, 10) and len(parts) == 3
    code = {(i.person_id, i.question_id): i.predicted_code for i in full.items}
    copies = [replace(i, predicted_code=code[i.person_id, i.question_id], parse_error=None) for i in items]
    half = profile_resamples(lean.items)
    assert np.isfinite(half[0]) and np.array_equal(half, profile_resamples(items, copies), equal_nan=True)
