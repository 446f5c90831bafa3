"""Numeric questions (hours worked, a 0-100 thermometer): scored by how far the model's number is from the
person's, not by whether it is the same code.

Per question, over the items the model answered with a number in the range (a failure is counted apart,
as every parse failure is): ``mae``, the mean absolute error; ``wasserstein``, W1 between the model's and
the people's answers divided by the question's range (0: the same distribution; 1: as far apart as the
range allows), with design weights where the survey has them. Beside them, on the same items, two
baselines' MAE: ``median_group`` (the median answer of the respondent's group, else of everyone) and
``demographic`` (a ridge regression on the persona attributes, cross-fitted like the demographic model
of ``metrics.demographic``: no answer of a respondent is in the fit that predicts them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from socbench.metrics.demographic import assign_folds, encode_attributes
from socbench.metrics.distribution import split_groups
from socbench.types import ScoredItem

MEDIAN_GROUP, DEMOGRAPHIC = "median_group", "demographic"  # the baselines' names


def _values(codes: Sequence[str | None]) -> np.ndarray:
    return np.array([math.nan if code is None else float(code) for code in codes], dtype=float)


def median_group(items: Sequence[ScoredItem]) -> np.ndarray:
    """Each item's prediction by the median answer of its group (``country_code``; all items when none)."""
    import pandas as pd  # here: pandas takes a second to import

    truth = pd.Series(_values([item.true_code for item in items]))
    return truth.groupby([str(item.country_code) for item in items]).transform("median").to_numpy()


def demographic(items: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]],
                seed: int = 0) -> np.ndarray:
    """Each item's cross-fitted ridge prediction from the person's attributes (the mean where a fold
    has nothing to learn from)."""
    from sklearn.linear_model import Ridge

    people = [item.person_id for item in items]
    truth = _values([item.true_code for item in items])
    matrix = encode_attributes({pid: attributes.get(pid, {}) for pid in dict.fromkeys(people)})
    rows = matrix.rows(people)
    folds = assign_folds(people, seed=seed)
    fold = np.array([folds[pid] for pid in people])
    out = np.full(len(items), float(truth.mean()))
    for k in set(fold):
        train = fold != k
        if train.sum() >= 2 and rows.shape[1]:
            out[~train] = Ridge(alpha=1.0).fit(rows[train], truth[train]).predict(rows[~train])
    return out


def question_scores(items: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]] | None,
                    weights: Mapping[int, float] | None, seed: int = 0) -> dict[str, Any]:
    """One numeric question's record: respondents, answered, range, means, ``mae``, ``wasserstein`` and
    each baseline's MAE (over the same answered items)."""
    from scipy.stats import wasserstein_distance

    low, high = items[0].numeric or (math.nan, math.nan)
    truth, model = _values([i.true_code for i in items]), _values(
        [i.predicted_code if i.parse_error is None and i.engine_error is None else None for i in items])
    on = ~np.isnan(model)  # the items answered: a MAE is taken over them
    w = np.array([weights[i.person_id] for i in items]) if weights else np.ones(len(items))
    record: dict[str, Any] = {"respondents": len(items), "answered": int(on.sum()),
                              "range": [low, high], "people_mean": float(np.average(truth, weights=w))}
    guesses = {MEDIAN_GROUP: median_group(items)}
    if attributes is not None:
        guesses[DEMOGRAPHIC] = demographic(items, attributes, seed)
    if not on.any():
        return {**record, "mae": math.nan, "wasserstein": math.nan,
                "baselines": dict.fromkeys(guesses, math.nan)}
    return {**record, "model_mean": float(np.average(model[on], weights=w[on])),
            "mae": float(np.abs(model[on] - truth[on]).mean()),
            "wasserstein": float(wasserstein_distance(model[on], truth, w[on], w)) / (high - low),
            "baselines": {name: float(np.abs(guess[on] - truth[on]).mean())
                          for name, guess in guesses.items()}}


def numeric_scores(scored: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]] | None = None,
                   weights: Mapping[int, float] | None = None, seed: int = 0) -> dict[str, Any]:
    """The domain's numeric questions: each one's record (``question_scores``) and their means (``mae``,
    ``wasserstein`` and each baseline's MAE over the questions); empty without numeric items."""
    numeric = [item for item in scored if item.numeric is not None]
    if not numeric:
        return {}
    questions = {qid: question_scores(group, attributes, weights, seed)
                 for (qid,), group in split_groups(numeric, ("question_id",)).items()}

    def mean(values: list[float]) -> float:
        finite = [v for v in values if not math.isnan(v)]
        return float(np.mean(finite)) if finite else math.nan

    names = sorted({name for q in questions.values() for name in q["baselines"]})
    return {"mae": mean([q["mae"] for q in questions.values()]),
            "wasserstein": mean([q["wasserstein"] for q in questions.values()]),
            "baselines": {name: mean([q["baselines"].get(name, math.nan) for q in questions.values()])
                          for name in names},
            "questions": questions}


def numeric_rows(numeric: Mapping[str, Any]) -> list[list[Any]]:
    """A domain's ``numeric_scores`` as report rows: question, MAE, W1 / range, the baselines' MAE (group
    median, demographic model), and how many of its respondents the model answered."""
    floors = (MEDIAN_GROUP, DEMOGRAPHIC)
    return [[qid, q["mae"], q["wasserstein"], *(q["baselines"].get(name) for name in floors),
             f"{q['answered']} of {q['respondents']}"] for qid, q in numeric.get("questions", {}).items()]
