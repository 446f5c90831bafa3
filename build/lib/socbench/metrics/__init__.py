"""Metrics over scored items: classification (sklearn), grouped breakdowns, baselines,
persona groups, answer distributions (scipy), ranking alignment and the per-question view,
uncertainty (bootstrap, McNemar), and the yardsticks: the cross-fitted demographic baseline,
SimBench's score, structure preservation, the persona effect and the report's lead sentences.
Import each from its module."""
