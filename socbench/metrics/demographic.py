"""The supervised demographic baseline: what a respondent's attributes alone predict. A model answering as a
persona should beat a classifier fed exactly the attributes it was shown (Peng et al. 2025, arXiv
2509.19088, on high accuracy with little individual signal). Per question a regularised multinomial logistic
regression, cross-fitted over respondents (seeded folds: no answer of a respondent is in the data that
predicts them). Attributes are encoded once per domain, never from answers: numeric (standardised, plus a
missing flag) when every value reads as a number with enough levels, else one-hot with rare categories
pooled. A fold with one class or no respondents falls back (counted in ``fallbacks``)."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from socbench.metrics.classification import accuracy, per_question_macro_f1
from socbench.metrics.distribution import group_codes, split_groups
from socbench.types import Code, ScoredItem

if TYPE_CHECKING:  # scipy and scikit-learn are imported where a model is fitted: seconds a report never needs
    from scipy import sparse

DEFAULT_FOLDS = 5
DEFAULT_SEED = 0
MIN_NUMERIC_LEVELS = 3
MIN_CATEGORY_COUNT = 5
MISSING = "<missing>"
TOLERANCE = 1e-2
Learner = Literal["logistic", "hgb"]
FitHook = Callable[[str, int, np.ndarray, np.ndarray], None]  # question, fold, train ids, test ids
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:years?(?: old)?)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class AttributeMatrix:
    """Respondents' attributes as model input: one row per person id, in ``person_ids`` order."""
    person_ids: tuple[int, ...]
    matrix: sparse.csr_matrix
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]

    def rows(self, person_ids: Sequence[int]) -> sparse.csr_matrix:
        index = {pid: i for i, pid in enumerate(self.person_ids)}
        return self.matrix[[index[pid] for pid in person_ids]]


def _as_number(value: object) -> float | None:
    match = _NUMBER.match(str(value))
    return float(match.group(1)) if match else None


def is_numeric(values: Sequence[object]) -> bool:
    """Every non-missing value reads as a number, with at least ``MIN_NUMERIC_LEVELS`` levels."""
    present = [v for v in values if not _missing(v)]
    numbers = [_as_number(v) for v in present]
    return bool(present) and all(n is not None for n in numbers) and len(set(numbers)) >= MIN_NUMERIC_LEVELS


def encode_attributes(attributes: Mapping[int, Mapping[str, str]],
                      min_category_count: int = MIN_CATEGORY_COUNT) -> AttributeMatrix:
    """One sparse matrix for a whole domain (numeric standardised, categorical one-hot)."""
    from scipy import sparse
    from sklearn.preprocessing import OneHotEncoder

    pids = tuple(attributes)
    frame = pd.DataFrame([dict(attributes[pid]) for pid in pids], index=list(pids))
    numeric = tuple(c for c in frame.columns if is_numeric(frame[c].tolist()))
    categorical = tuple(c for c in frame.columns if c not in numeric)
    blocks = []
    for column in numeric:
        values = np.array([math.nan if _missing(v) else _as_number(v) for v in frame[column]], dtype=float)
        missing = np.isnan(values)
        mean, std = np.nanmean(values), np.nanstd(values)
        scaled = np.where(missing, 0.0, (values - mean) / (std if std > 0 else 1.0))
        blocks.append(sparse.csr_matrix(np.column_stack([scaled, missing.astype(float)])))
    if categorical:
        cats = frame[list(categorical)].map(_category).astype(str)
        encoder = OneHotEncoder(min_frequency=min_category_count, handle_unknown="infrequent_if_exist",
                                sparse_output=True, dtype=np.float64)
        blocks.append(sparse.csr_matrix(encoder.fit_transform(cats)))
    # no attribute at all: one empty column, so the model is its intercept (the fold's answer shares)
    matrix = sparse.hstack(blocks, format="csr") if blocks else sparse.csr_matrix((len(pids), 1))
    return AttributeMatrix(pids, matrix, numeric, categorical)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


def _category(value: object) -> str:
    return MISSING if _missing(value) else str(value)


def assign_folds(person_ids: Sequence[int], k: int = DEFAULT_FOLDS,
                 seed: int = DEFAULT_SEED) -> dict[int, int]:
    """Person id -> fold 0..k-1: a seeded shuffle dealt round-robin (balanced, one fold per person)."""
    if k < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {k}")
    unique = sorted(set(person_ids))
    order = np.random.default_rng(seed).permutation(len(unique))
    return {unique[i]: int(position % k) for position, i in enumerate(order)}


@dataclass(frozen=True)
class DemographicResult:
    """The demographic model's predictions as scored items (``predicted_code``, ``distribution``
    over the item's offered codes), with metrics per question and for the domain."""
    items: tuple[ScoredItem, ...]
    folds: dict[int, int]
    per_question: dict[str, dict[str, float]]
    metrics: dict[str, float]
    distributions: dict[str, dict[Code, float]]  # question -> mean predicted distribution
    fallbacks: dict[str, int] = field(default_factory=dict)  # reason -> items


def _learner(name: Learner, seed: int, c: float, max_iter: int):
    """lbfgs stops at a gradient tolerance of 1e-2: three times faster than sklearn's 1e-4 on
    1,000 x 1,600 one-hot columns, and on that synthetic domain no less accurate (stopping early
    shrinks like a stronger penalty); bench/demographic_model.py measures the whole domain."""
    if name == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=50, random_state=seed)
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=max_iter, solver="lbfgs", tol=TOLERANCE)


def _fold_probabilities(x_train, y_train, w_train, x_test, codes: tuple[Code, ...], learner: Learner,
                        seed: int, c: float, max_iter: int) -> tuple[np.ndarray, str | None]:
    """Predicted probabilities over ``codes`` for the test rows, and a fallback reason if any."""
    from sklearn.exceptions import ConvergenceWarning

    out = np.zeros((x_test.shape[0], len(codes)))
    classes = sorted(set(y_train))
    if not classes:
        return out + 1.0 / len(codes), "no_training_respondents"
    if len(classes) == 1:
        out[:, codes.index(classes[0])] = 1.0
        return out, "single_class_in_training"
    model = _learner(learner, seed, c, max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train.toarray() if learner == "hgb" else x_train, y_train, sample_weight=w_train)
    probs = model.predict_proba(x_test.toarray() if learner == "hgb" else x_test)
    for j, cls in enumerate(model.classes_):
        out[:, codes.index(cls)] = probs[:, j]
    return out, None


def _scored(item: ScoredItem, probs: np.ndarray, codes: tuple[Code, ...]) -> ScoredItem:
    """The item answered by the demographic model: its distribution restricted to the item's codes."""
    shown = {code: float(probs[codes.index(code)]) for code in item.offered_codes if code in codes}
    total = sum(shown.values())
    dist = ({c: p / total for c, p in shown.items()} if total > 0
            else {c: 1.0 / len(item.offered_codes) for c in item.offered_codes})
    best = max(dist.values())
    predicted = next(code for code in item.offered_codes if dist[code] == best)  # ties: survey order
    return replace(item, predicted_code=predicted, correct=predicted == item.true_code, parse_error=None,
                   distribution=dist, engine_error=None, raw_reply=None)


def demographic_model(items: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]], *,
                      weights: Mapping[int, float] | None = None, k: int = DEFAULT_FOLDS,
                      seed: int = DEFAULT_SEED, learner: Learner = "logistic", c: float = 1.0,
                      max_iter: int = 100, encoded: AttributeMatrix | None = None,
                      on_fit: FitHook | None = None) -> DemographicResult:
    """Cross-fitted predictions for every item from the respondent's ``attributes`` (person id ->
    the persona attributes the model was shown). ``on_fit`` sees each fit's train/test person ids."""
    from sklearn import config_context  # first: it loads the BLAS and OpenMP pools limited below
    from threadpoolctl import threadpool_limits

    encoded = encoded or encode_attributes(attributes)
    folds = assign_folds([item.person_id for item in items], k, seed)
    answered: list[ScoredItem] = []
    fallbacks: dict[str, int] = {}
    # One thread: a fit is a few hundred rows, and OpenMP threads on a shared 2-core host only contend.
    # The matrix is finite and the settings fixed: scikit-learn's per-fit checks were a third of a
    # small domain's time (hundreds of fits of a few rows each); the fits are the same without them.
    with threadpool_limits(limits=1), config_context(assume_finite=True, skip_parameter_validation=True):
        for (qid,), group in split_groups(items, ("question_id",)).items():
            answered.extend(_question(qid, group, encoded, folds, k, weights, fallbacks, on_fit,
                                      (learner, seed, c, max_iter)))
    return _summarise(tuple(answered), folds, fallbacks, weights)


def _question(qid: str, group: list[ScoredItem], encoded: AttributeMatrix, folds: dict[int, int], k: int,
              weights: Mapping[int, float] | None, fallbacks: dict[str, int], on_fit: FitHook | None,
              settings: tuple[Learner, int, float, int]) -> list[ScoredItem]:
    """One question's items answered by the models of the folds they were not in."""
    codes = group_codes(group)
    pids = np.array([item.person_id for item in group])
    x, y = encoded.rows(pids), np.array([item.true_code for item in group])
    w = np.array([weights[p] for p in pids], dtype=float) if weights is not None else None
    fold = np.array([folds[p] for p in pids])
    probs = np.zeros((len(group), len(codes)))
    for f in range(k):
        test = fold == f
        if not test.any():
            continue
        train = ~test
        if on_fit is not None:
            on_fit(qid, f, pids[train], pids[test])
        probs[test], reason = _fold_probabilities(x[train], y[train], None if w is None else w[train],
                                                  x[test], codes, *settings)
        if reason:
            fallbacks[reason] = fallbacks.get(reason, 0) + int(test.sum())
    return [_scored(item, p, codes) for item, p in zip(group, probs, strict=True)]


def _summarise(items: tuple[ScoredItem, ...], folds: dict[int, int], fallbacks: dict[str, int],
               weights: Mapping[int, float] | None) -> DemographicResult:
    per_question, distributions = {}, {}
    for (qid,), group in split_groups(items, ("question_id",)).items():
        codes = group_codes(group)
        vectors = [[item.distribution.get(c, 0.0) for c in codes] for item in group if item.distribution]
        mean = np.mean(vectors, axis=0)
        distributions[qid] = {c: float(p) for c, p in zip(codes, mean, strict=True)}
        per_question[qid] = {"n": float(len(group)), "accuracy": accuracy(group),
                             "macro_f1": per_question_macro_f1(group)}
    metrics = {"accuracy": accuracy(items), "macro_f1": per_question_macro_f1(items),
               "items": float(len(items))}
    if weights is not None:
        w = np.array([weights[item.person_id] for item in items], dtype=float)
        metrics["weighted_accuracy"] = (float(np.average([i.correct for i in items], weights=w))
                                        if w.sum() > 0 else math.nan)
    return DemographicResult(items, folds, per_question, metrics, distributions, fallbacks)
