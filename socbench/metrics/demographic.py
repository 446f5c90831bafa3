"""The supervised demographic baseline: what a respondent's attributes alone predict. A model answering as a
persona should beat a classifier fed exactly the attributes it was shown (Peng et al. 2025, arXiv
2509.19088, on high accuracy with little individual signal). Per question a regularised multinomial logistic
regression, cross-fitted over respondents (seeded folds: no answer of a respondent is in the data that
predicts them). Attributes are encoded once per domain, never from answers: numeric (standardised, plus a
missing flag) when every value reads as a number with enough levels, else one-hot with rare categories
pooled and no column for a missing value. A fold with one class or no respondents falls back (counted in
``fallbacks``).

Solver: a fold's questions are fitted together in one L-BFGS run while they are small (at most
``JOINT_PARAMETERS`` coefficients: 10-100 respondents a domain), stopped at ``JOINT_TOLERANCE``; larger
domains fit each question alone by the same code, scikit-learn's model and stop (``TOLERANCE``), without its
per-fit checks. ``SOLVER`` names the settings: yardsticks cached under others are not reused.

Cost (bench/demographic_model.py, docs/performance.md): 3 folds (5 cost two thirds more fits; accuracy held
within 0.01 from 10 to 10,000 respondents); a question's fit in a fold learns from at most ``training_cap``
respondents (``TRAINING_CAP``, or ``ROWS_PER_COLUMN`` per column of a wider attribute matrix: a wide model
needs more people to be as accurate), the first by one seeded random order of the domain's people (a fold's
questions share their sample, so the joint fit stays that size), and predicts every held-out one: the fits
cost no more at 50,000 respondents than at the cap, and the rest is linear. Below the cap nothing is sampled;
further above it the model is one of the cap's size, which may fall behind an uncapped one."""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from socbench.metrics.classification import accuracy, per_question_macro_f1
from socbench.metrics.distribution import group_codes, split_groups
from socbench.types import Code, ScoredItem

if TYPE_CHECKING:  # scipy and scikit-learn are imported where a model is fitted: seconds a report never needs
    from scipy import sparse

DEFAULT_FOLDS = 3
MIN_NUMERIC_LEVELS = 3
MIN_CATEGORY_COUNT = 5
MISSING = "<missing>"
TOLERANCE = 1e-2
C, MAX_ITER = 1.0, 100  # the regularisation and the iterations of a question's fit: scikit-learn's defaults
JOINT_PARAMETERS = 50_000  # a fold's questions are fitted together up to this many coefficients
JOINT_TOLERANCE = 1e-4  # a question's fit then moves < 2e-3 with the other questions of its domain
TRAINING_CAP = 5_000  # respondents a question's fit learns from, at most: for a narrow matrix
ROWS_PER_COLUMN = 4  # for a wider one, this many per column
SOLVER = (f"joint<={JOINT_PARAMETERS}@{JOINT_TOLERANCE}, else each@{TOLERANCE}; "
          f"cap max({TRAINING_CAP}, {ROWS_PER_COLUMN}/column); {DEFAULT_FOLDS} folds; missing: no column")
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


def _read(values: Sequence[object]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(each value as a number, NaN where it reads as none; which are missing; each one's index into the
    sorted distinct texts, missing ones as ``MISSING``; how often each distinct text occurs). Each distinct
    text is read once: a codebook's hundreds of attribute columns hold few distinct values each."""
    index, distinct = pd.factorize(np.array(values, dtype=object), use_na_sentinel=False)
    gone = np.array([v is None or (isinstance(v, float) and math.isnan(v)) or not str(v).strip()
                     for v in distinct], dtype=bool)
    shown = np.array([MISSING if m else str(v) for v, m in zip(distinct, gone, strict=True)], dtype=object)
    texts, inverse = np.unique(shown, return_inverse=True)
    inverse, missing = inverse[index], gone[index]
    matches = [_NUMBER.match(str(t)) for t in texts]
    parsed = np.array([float(m.group(1)) if m else None for m in matches], dtype=float)  # None: NaN
    counts = np.bincount(inverse, minlength=len(texts))
    return np.where(missing, math.nan, parsed[inverse]), missing, inverse, counts


def _numeric(read: tuple[np.ndarray, ...]) -> bool:
    """Every non-missing value reads as a number, with at least ``MIN_NUMERIC_LEVELS`` levels."""
    present = read[0][~read[1]]
    return len(present) > 0 and not np.isnan(present).any() and len(np.unique(present)) >= MIN_NUMERIC_LEVELS


def encode_attributes(attributes: Mapping[int, Mapping[str, str]],
                      min_category_count: int = MIN_CATEGORY_COUNT) -> AttributeMatrix:
    """One sparse matrix for a whole domain (numeric standardised, categorical one-hot)."""
    from scipy import sparse

    pids = tuple(attributes)
    table = _table([attributes[pid] for pid in pids])
    read = {key: _read(values) for key, values in table.items()}
    numeric = tuple(key for key in read if _numeric(read[key]))
    categorical = tuple(key for key in read if key not in numeric)
    blocks = []
    for key in numeric:
        values, missing, _, _ = read[key]
        mean, std = np.nanmean(values), np.nanstd(values)
        scaled = np.where(missing, 0.0, (values - mean) / (std if std > 0 else 1.0))
        blocks.append(sparse.csr_matrix(np.column_stack([scaled, missing.astype(float)])))
    if categorical:
        blocks.append(_one_hot([read[key][1:] for key in categorical], len(pids), min_category_count))
    matrix = sparse.hstack(blocks, format="csr") if blocks else sparse.csr_matrix((len(pids), 0))
    if not matrix.shape[1]:  # nothing shown: one empty column, the model its intercept (the answer shares)
        matrix = sparse.csr_matrix((len(pids), 1))
    return AttributeMatrix(pids, matrix, numeric, categorical)


def _table(rows: list[Mapping[str, str]]) -> dict[str, np.ndarray]:
    """Each attribute's values over ``rows`` (None where a row lacks it), in order of first appearance: one
    pass over the rows (each person's keys are strings of their own: a lookup per key and person is slow)."""
    column = {key: j for j, key in enumerate(dict.fromkeys(key for row in rows for key in row))}
    table = np.full((len(rows), len(column)), None, dtype=object)
    for i, row in enumerate(rows):
        for key, value in row.items():
            table[i, column[key]] = value
    return {key: table[:, j] for key, j in column.items()}


def _one_hot(columns: list[tuple[np.ndarray, ...]], rows: int, min_count: int) -> sparse.csr_matrix:
    """scikit-learn's ``OneHotEncoder(min_frequency=min_count)`` of columns read by ``_read`` (which rows are
    missing, index into the sorted categories, their counts), column for column: the categories sorted, those
    seen fewer than ``min_count`` times pooled into one last column; a missing value has no column (the
    reference level: a module's country-specific variables are missing for every other country, most of its
    cells, each a term of every product in every fit). Built directly: the encoder's per-column checks were
    seconds on a codebook's hundreds of attributes."""
    from scipy import sparse

    people, codes, offset = [], [], 0
    for missing, inverse, counts in columns:
        shown = np.bincount(inverse[~missing], minlength=len(counts))  # the missing category counts 0
        frequent = shown >= min_count
        position = np.where(frequent, np.cumsum(frequent) - 1, frequent.sum())  # the rare: the last column
        people.append(np.flatnonzero(~missing))
        codes.append(offset + position[inverse[~missing]])
        offset += int(frequent.sum()) + int(((shown > 0) & ~frequent).any())
    row, column = np.concatenate(people), np.concatenate(codes)
    order = np.lexsort((column, row))  # row by row, each row's columns ascending (CSR's canonical order)
    return sparse.csr_matrix((np.ones(len(row)), (row[order], column[order])), shape=(rows, offset))


def assign_folds(person_ids: Sequence[int], k: int = DEFAULT_FOLDS, seed: int = 0) -> dict[int, int]:
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


@dataclass(frozen=True)
class _Fit:
    """One question in one fold: training rows of the attribute matrix with their class indices into
    ``classes`` (sorted, as scikit-learn's ``classes_``) and weights; the rows to predict."""
    rows: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None
    test: np.ndarray
    classes: tuple[Code, ...]


def _fit_fold(matrix: sparse.csr_matrix, fits: list[_Fit], learner: Learner, seed: int) -> list[np.ndarray]:
    """Probabilities over each fit's classes for its test rows: a fold's questions together while they are
    small, else each alone (``_joint_logistic`` of one: scikit-learn's model and stop, without its per-fit
    checks); or gradient boosting."""
    if learner == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return [HistGradientBoostingClassifier(max_iter=50, random_state=seed)
                .fit(matrix[fit.rows].toarray(), fit.labels, sample_weight=fit.weights)
                .predict_proba(matrix[fit.test].toarray()) for fit in fits]
    if fits and matrix.shape[1] * sum(len(f.classes) for f in fits) <= JOINT_PARAMETERS:
        return _joint_logistic(matrix, fits)
    return [_joint_logistic(matrix, [fit], TOLERANCE)[0] for fit in fits]


def _joint_logistic(matrix: sparse.csr_matrix, fits: list[_Fit], tolerance: float = JOINT_TOLERANCE,
                    ) -> list[np.ndarray]:
    """Every question of a fold in one L-BFGS run: a small domain is hundreds of fits of a few rows, and
    scikit-learn's set-up per fit was most of its scoring time. Each question's part of the objective is
    scikit-learn's (weighted mean log-loss plus ||W||^2 / (2 C n); a binary question binomial, its first
    class at 0), so the parts are independent and the joint optimum is each question's own. The stop is
    tighter than ``TOLERANCE`` (``JOINT_TOLERANCE``) so that no question's fit depends on its neighbours'."""
    from scipy import optimize
    from scipy.special import softmax

    sizes = np.array([len(f.classes) for f in fits])
    parts, width, columns = len(fits), int(sizes.max()), matrix.shape[1]
    people = np.unique(np.concatenate([f.rows for f in fits]))
    x = matrix[people]
    xt = x.T  # CSC: its products sum in the order CSR's would, without a copy per fit
    part = np.repeat(np.arange(parts), [len(f.rows) for f in fits])
    cell = np.searchsorted(people, np.concatenate([f.rows for f in fits])) * parts + part
    label, at = np.concatenate([f.labels for f in fits]), np.arange(len(part))
    weights = [np.ones(len(f.rows)) if f.weights is None else f.weights for f in fits]
    total = np.array([w.sum() for w in weights])
    share, penalty = np.concatenate(weights) / total[part], 1.0 / (C * total)
    slot = np.arange(width)[None, :]
    closed = np.where(slot < sizes[:, None], 0.0, -np.inf)[part]  # classes a question does not have
    free = (slot < sizes[:, None]) & ~((sizes[:, None] == 2) & (slot == 0))
    split, unique = columns * parts * width, len(np.unique(cell)) == len(cell)

    def loss_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:split].reshape(columns, parts, width), theta[split:].reshape(parts, width)
        z = np.asarray(x @ w.reshape(columns, -1)).reshape(-1, width)[cell] + b[part] + closed
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1)
        loss = share @ (np.log(s) - z[at, label]) + 0.5 * (w * w).sum(axis=(0, 2)) @ penalty
        dz = e / s[:, None]
        dz[at, label] -= 1.0
        dz *= share[:, None]
        full = np.zeros((len(people) * parts, width))
        if unique:
            full[cell] = dz
        else:  # a person twice in a question
            np.add.at(full, cell, dz)
        gw = np.asarray(xt @ full.reshape(len(people), -1)).reshape(w.shape) + w * penalty[:, None]
        gb = np.stack([np.bincount(part, dz[:, j], parts) for j in range(width)], axis=1)
        return float(loss), np.concatenate([(gw * free).ravel(), (gb * free).ravel()])

    theta = optimize.minimize(loss_gradient, np.zeros(split + parts * width), method="L-BFGS-B", jac=True,
                              options={"maxiter": MAX_ITER * parts, "maxls": 50, "gtol": tolerance,
                                       "ftol": 64 * np.finfo(float).eps}).x
    w, b = theta[:split].reshape(columns, parts, width), theta[split:].reshape(parts, width)
    return [softmax(np.asarray(matrix[fit.test] @ w[:, n, :sizes[n]]) + b[n, :sizes[n]], axis=1)
            for n, fit in enumerate(fits)]


def _answered(q: _Question) -> list[ScoredItem]:
    """The question's items answered by the demographic model: each one's distribution restricted to its
    offered codes and renormalised (uniform where it sums to 0), its answer the most likely, ties in survey
    order. The items that show the same codes at once (the sum left to right, as ``sum`` adds)."""
    rows_by: dict[tuple[Code, ...], list[int]] = {}
    for row, item in enumerate(q.group):
        rows_by.setdefault(item.offered_codes, []).append(row)
    found: list[ScoredItem] = list(q.group)
    for offered, rows in rows_by.items():
        shown = q.probs[np.ix_(rows, [q.codes.index(code) for code in offered])]
        total = functools.reduce(operator.add, shown.T)
        some = total > 0
        dist = np.where(some[:, None], shown / np.where(some, total, 1.0)[:, None], 1.0 / len(offered))
        for row, values, best in zip(rows, dist.tolist(), dist.argmax(axis=1).tolist(), strict=True):
            item, predicted = q.group[row], offered[best]
            found[row] = _as_answered(item, predicted, dict(zip(offered, values, strict=True)))
    return found


def _as_answered(item: ScoredItem, predicted: Code | None, distribution: dict[Code, float] | None,
                 ) -> ScoredItem:
    """``item`` answered ``predicted`` with ``distribution`` (None: kept without it), no reply or error of
    its own. Built directly: ``dataclasses.replace`` took 2.4x as long, twice for each of a domain's items."""
    return ScoredItem(item.person_id, item.question_id, item.country_code, item.true_code, predicted,
                      predicted == item.true_code, None, item.country_specific, item.offered_codes,
                      distribution, item.groups, None, None, item.draws, item.numeric)


def fit_demographic(items: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]], *,
                    weights: Mapping[int, float] | None = None, k: int = DEFAULT_FOLDS, seed: int = 0,
                    learner: Learner = "logistic", encoded: AttributeMatrix | None = None,
                    on_fit: FitHook | None = None, cap: int | None = None) -> Fitted:
    """Cross-fitted predictions for every item from the respondent's ``attributes`` (person id ->
    the persona attributes the model was shown), each fit on at most ``cap`` respondents (default:
    ``training_cap``). ``on_fit`` sees each fit's train/test person ids."""
    from scipy import optimize  # noqa: F401  first: it loads the BLAS (L-BFGS's) that the limit below holds
    from threadpoolctl import threadpool_limits

    encoded = encoded or encode_attributes(attributes)
    folds = assign_folds([item.person_id for item in items], k, seed)
    row = {pid: i for i, pid in enumerate(encoded.person_ids)}
    cap = training_cap(encoded.matrix.shape[1]) if cap is None else cap
    rank = np.random.default_rng([seed, 43]).permutation(len(row))  # who is sampled first, above the cap
    questions = [_Question(qid, group, row, folds, weights, rank)
                 for (qid,), group in split_groups(items, ("question_id",)).items()]
    fallbacks: dict[str, int] = {}
    # One thread: a fit is a few hundred rows, and OpenMP threads on a shared 2-core host only contend.
    with threadpool_limits(limits=1):
        for f in range(k):
            fits = [(q, fit) for q in questions if (fit := q.fold_fit(f, fallbacks, on_fit, cap)) is not None]
            found = _fit_fold(encoded.matrix, [fit for _, fit in fits], learner, seed)
            for (q, fit), probs in zip(fits, found, strict=True):
                q.probs[np.ix_(q.fold == f, [q.codes.index(cls) for cls in fit.classes])] = probs
    return Fitted(tuple(questions), folds, fallbacks)


def demographic_model(items: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]],
                      **settings: Any) -> DemographicResult:
    """``fit_demographic``'s predictions, every item answered and summarised."""
    return fit_demographic(items, attributes, **settings).result()


@dataclass(frozen=True)
class Fitted:
    """The model's probabilities for each question's items, before any item is answered."""
    questions: tuple[_Question, ...]
    folds: dict[int, int]
    fallbacks: dict[str, int]

    def result(self, lean: bool = False,
               each: Callable[[list[ScoredItem]], object] | None = None) -> DemographicResult:
        """The items answered and summarised a question at a time; ``lean``: kept without their
        distributions, which ``each`` sees first (a whole survey's answered items with their distributions
        at once were ~2 GB at 50,000 respondents)."""
        answered: list[ScoredItem] = []
        per_question, distributions = {}, {}
        for q in self.questions:
            group = _answered(q)
            vectors = [[i.distribution.get(c, 0.0) for c in q.codes] for i in group if i.distribution]
            distributions[q.qid] = dict(zip(q.codes, np.mean(vectors, axis=0).tolist(), strict=True))
            per_question[q.qid] = {"n": float(len(group)), "accuracy": accuracy(group),
                                   "macro_f1": per_question_macro_f1(group)}
            if each is not None:
                each(group)
            answered += [_as_answered(i, i.predicted_code, None) for i in group] if lean else group
        items = tuple(answered)
        f1 = [record["macro_f1"] for record in per_question.values()]  # as per_question_macro_f1 sums
        metrics = {"accuracy": accuracy(items), "macro_f1": sum(f1) / len(f1) if f1 else math.nan,
                   "items": float(len(items))}
        return DemographicResult(items, self.folds, per_question, metrics, distributions, self.fallbacks)


def training_cap(columns: int) -> int:
    """Respondents a fit learns from, at most, on an attribute matrix of ``columns`` columns."""
    return max(TRAINING_CAP, ROWS_PER_COLUMN * columns)


class _Question:
    """One question's items as arrays (rows, answers, weights, folds) and the probabilities found so far."""

    def __init__(self, qid: str, group: list[ScoredItem], row: Mapping[int, int], folds: Mapping[int, int],
                 weights: Mapping[int, float] | None, rank: np.ndarray) -> None:
        self.qid, self.group, self.codes = qid, group, group_codes(group)
        self.pids = np.array([item.person_id for item in group])
        self.rows = np.array([row[p] for p in self.pids], dtype=int)
        self.y = np.array([item.true_code for item in group])
        self.w = np.array([weights[p] for p in self.pids], dtype=float) if weights is not None else None
        self.fold = np.array([folds[p] for p in self.pids])
        self.rank = rank[self.rows]
        self.probs = np.zeros((len(group), len(self.codes)))

    def fold_fit(self, f: int, fallbacks: dict[str, int], on_fit: FitHook | None, cap: int) -> _Fit | None:
        """Fold ``f``'s fit, or None: no item in the fold, or a fallback (filled in and counted)."""
        test = self.fold == f
        if not test.any():
            return None
        train = np.flatnonzero(~test)
        if len(train) > cap:  # the first ``cap`` by the domain's seeded order, in item order
            train = np.sort(train[np.argsort(self.rank[train], kind="stable")[:cap]])
        if on_fit is not None:
            on_fit(self.qid, f, self.pids[train], self.pids[test])
        classes = tuple(sorted(set(self.y[train].tolist())))
        if len(classes) > 1:
            labels = np.searchsorted(np.array(classes), self.y[train])
            return _Fit(self.rows[train], labels, None if self.w is None else self.w[train], self.rows[test],
                        classes)
        reason = "single_class_in_training" if classes else "no_training_respondents"
        fallbacks[reason] = fallbacks.get(reason, 0) + int(test.sum())
        self.probs[test] = [float(c in classes) for c in self.codes] if classes else 1.0 / len(self.codes)
        return None
