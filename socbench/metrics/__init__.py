"""Metrics over scored items: classification (sklearn), grouped breakdowns, baselines,
persona groups, answer distributions (scipy), ranking alignment and the per-question view,
uncertainty (bootstrap, McNemar), and the yardsticks: the cross-fitted demographic baseline,
SimBench's score, structure preservation, the persona effect and the report's lead sentences."""

from socbench.metrics.baselines import baselines, majority_baseline, margin_over_best, uniform_baseline
from socbench.metrics.circular import reduce_domain
from socbench.metrics.classification import (
    accuracy,
    parse_failure_rate,
    per_question_macro_f1,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.demographic import DemographicResult, demographic_model, encode_attributes
from socbench.metrics.distribution import distribution_scores, js_score, wasserstein_score
from socbench.metrics.grouped import breakdown, grouped
from socbench.metrics.headline import lead_sentence, structure_sentence
from socbench.metrics.persona_effect import PersonaEffect, persona_effect
from socbench.metrics.persona_groups import persona_breakdowns, persona_groups
from socbench.metrics.questions import question_view
from socbench.metrics.ranking import kendall_tau_b, modal_agreement, rank_test
from socbench.metrics.simbench import SimBenchScore, simbench_score
from socbench.metrics.structure import Structure, structure
from socbench.metrics.uncertainty import (
    PairedComparison,
    cluster_bootstrap_ci,
    mcnemar_exact,
    paired_comparison,
)

__all__ = [
    "DemographicResult",
    "PairedComparison",
    "PersonaEffect",
    "SimBenchScore",
    "Structure",
    "accuracy",
    "baselines",
    "breakdown",
    "cluster_bootstrap_ci",
    "demographic_model",
    "distribution_scores",
    "encode_attributes",
    "grouped",
    "js_score",
    "kendall_tau_b",
    "lead_sentence",
    "majority_baseline",
    "margin_over_best",
    "modal_agreement",
    "mcnemar_exact",
    "paired_comparison",
    "parse_failure_rate",
    "per_question_macro_f1",
    "persona_breakdowns",
    "persona_effect",
    "persona_groups",
    "question_view",
    "rank_test",
    "reduce_domain",
    "seed_macro_f1",
    "seed_micro_f1",
    "simbench_score",
    "structure",
    "structure_sentence",
    "uniform_baseline",
    "wasserstein_score",
]
