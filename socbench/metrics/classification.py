"""Classification metrics over one domain's scored items (scikit-learn's, from counts); no items give NaN.
``seed_macro_f1``/``seed_micro_f1`` keep the original system's pooled definitions (code "1" of every
question is one class; pooled micro-F1 equals accuracy) so numbers stay comparable with its published
results; ``per_question_macro_f1``, within each question's own options, is the meaningful one."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from socbench.metrics.distribution import split_groups
from socbench.types import ScoredItem

INVALID = "invalid"  # pooled label of an unread or unoffered answer; never an ISSP code (integer strings)


def accuracy(items: Sequence[ScoredItem]) -> float:
    """Correct items / scoreable items; each (respondent, question) item counts once."""
    return sum(item.correct for item in items) / len(items) if items else math.nan


def parse_failure_rate(items: Sequence[ScoredItem]) -> float:
    """Share of items whose answer could not be used (no/failed extraction, unoffered code)."""
    return sum(item.parse_error is not None for item in items) / len(items) if items else math.nan


def pooled_labels(items: Sequence[ScoredItem]) -> tuple[list[str], list[str]]:
    """``(y_true, y_pred)`` in the original system's pooled label space; a missing or unoffered
    prediction is ``INVALID``: always wrong, never a class of its own in the macro average."""
    y_pred = [INVALID if i.predicted_code is None or i.parse_error is not None
              or i.predicted_code not in i.offered_codes else i.predicted_code for i in items]
    return [item.true_code for item in items], y_pred


def seed_macro_f1(items: Sequence[ScoredItem]) -> float:
    """The original system's pooled macro-F1 (for comparability, not interpretation): labels are the
    domain's distinct true codes, so an unheld predicted code or ``INVALID`` only lowers a recall."""
    if not items:
        return math.nan
    y_true, y_pred = pooled_labels(items)
    return macro_f1_counts(y_true, y_pred, sorted(set(y_true)))


def seed_micro_f1(items: Sequence[ScoredItem]) -> float:
    """The original system's pooled micro-F1: equals ``accuracy``, reported because its files carry it.
    scikit-learn's ``f1_score(average="micro")`` bit for bit: 2 tp / (2 tp + fp + fn) with every wrong
    answer one false positive and one false negative, so 2 tp / 2 n, the same float as tp / n."""
    if not items:
        return math.nan
    y_true, y_pred = pooled_labels(items)
    return sum(t == p for t, p in zip(y_true, y_pred, strict=True)) / len(items)


def per_question_macro_f1(items: Sequence[ScoredItem]) -> float:
    """Macro-F1 within each question's own options, averaged over questions; an offered code nobody holds
    or predicted has no F1 and is left out, so a perfect answerer scores 1.0."""
    if not items:
        return math.nan
    by_question = split_groups(items, ("question_id",))
    return sum(_question_macro_f1(group) for group in by_question.values()) / len(by_question)


def _question_macro_f1(items: Sequence[ScoredItem]) -> float:
    offered = {code for item in items for code in item.offered_codes}
    y_true, y_pred = pooled_labels(items)
    labels = sorted(offered & (set(y_true) | set(y_pred)))
    return macro_f1_counts(y_true, y_pred, labels) if labels else math.nan  # f1_score's NaN for no label


def macro_f1_counts(y_true: list[str], y_pred: list[str], labels: list[str]) -> float:
    """scikit-learn's ``f1_score(average="macro", zero_division=0)`` over ``labels``, bit for bit
    (the same float64 operations: 2·tp / (true + predicted) per label, then their mean), from
    counts: a question has a few dozen answers, and f1_score's input checks took 4 ms per call."""
    hits = Counter(t for t, p in zip(y_true, y_pred) if t == p)
    true_n, pred_n = Counter(y_true), Counter(y_pred)
    per_label = [2.0 * hits[c] / (1.0 * true_n[c] + pred_n[c]) if true_n[c] + pred_n[c] else 0.0
                 for c in labels]
    return float(np.mean(np.array(per_label, dtype=np.float64)))
