"""Metrics over scored items: classification (sklearn), grouped breakdowns, baselines,
persona groups, answer distributions (scipy), ranking alignment and the per-question view,
uncertainty (bootstrap, McNemar), and the yardsticks: the cross-fitted demographic baseline,
SimBench's score, structure preservation, the persona effect and the report's lead sentences.
Import each from its module; ``reduce_domain`` (an expansion's reducer) is named here so the
stages that run it need not know which expansion a run has."""

from socbench.metrics.circular import reduce_domain

__all__ = ["reduce_domain"]
