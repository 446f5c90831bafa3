"""Metrics over scored items: classification (sklearn), grouped breakdowns, baselines,
persona groups, answer distributions (scipy) and uncertainty (bootstrap, McNemar)."""

from socbench.metrics.baselines import baselines, majority_baseline, margin_over_best, uniform_baseline
from socbench.metrics.classification import (
    accuracy,
    parse_failure_rate,
    per_question_macro_f1,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.distribution import distribution_scores, js_score, wasserstein_score
from socbench.metrics.grouped import breakdown, grouped
from socbench.metrics.persona_groups import find_persona_keys, persona_breakdowns, persona_groups
from socbench.metrics.uncertainty import (
    PairedComparison,
    cluster_bootstrap_ci,
    mcnemar_exact,
    paired_comparison,
)

__all__ = [
    "PairedComparison",
    "accuracy",
    "baselines",
    "breakdown",
    "cluster_bootstrap_ci",
    "distribution_scores",
    "find_persona_keys",
    "grouped",
    "js_score",
    "majority_baseline",
    "margin_over_best",
    "mcnemar_exact",
    "paired_comparison",
    "parse_failure_rate",
    "per_question_macro_f1",
    "persona_breakdowns",
    "persona_groups",
    "seed_macro_f1",
    "seed_micro_f1",
    "uniform_baseline",
    "wasserstein_score",
]
