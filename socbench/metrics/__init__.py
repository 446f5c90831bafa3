"""Metrics over scored items: classification (sklearn), grouped breakdowns, baselines."""

from socbench.metrics.baselines import baselines, majority_baseline, margin_over_best, uniform_baseline
from socbench.metrics.classification import (
    accuracy,
    parse_failure_rate,
    per_question_macro_f1,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.grouped import breakdown, grouped

__all__ = [
    "accuracy",
    "baselines",
    "breakdown",
    "grouped",
    "majority_baseline",
    "margin_over_best",
    "parse_failure_rate",
    "per_question_macro_f1",
    "seed_macro_f1",
    "seed_micro_f1",
    "uniform_baseline",
]
