"""The per-question view: people's and the model's option shares (weighted beside them with design weights),
accuracy and ranking alignment per question, and per country where the question was asked in several. A
model that answers "1" to everything shows at once. Alignment needs ``min_respondents`` respondents (NaN,
``enough_respondents`` false, below): shares from a handful of people rank nothing reliably."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from socbench.metrics.baselines import UNMAPPED
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS, Weights, group_codes, split_groups
from socbench.metrics.ranking import LEVELS, group_record, level_groups, level_summary
from socbench.types import Code, Item, ScoredItem

ALIGNMENT_KEYS = ("modal_agreement", "kendall_tau", "kendall_tau_p")


def option_labels(items: Sequence[Item]) -> dict[str, dict[Code, str]]:
    """Per question, each code's label as most respondents saw it (survey-wide wording first)."""
    labels: dict[str, dict[Code, str]] = {}
    for item in sorted(items, key=lambda i: i.country_specific):  # base options before overrides
        known = labels.setdefault(item.question_id, {})
        for code, label in item.options:
            known.setdefault(code, label)
    return labels


def _without_alignment(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, **{key: math.nan for key in record if key.endswith(ALIGNMENT_KEYS)},
            "enough_respondents": False}


def question_view(items: Sequence[Item], scored: Sequence[ScoredItem], texts: Mapping[str, str] | None = None,
                  min_respondents: int = DEFAULT_MIN_RESPONDENTS, weights: Weights | None = None,
                  seed: int = 0) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
    """``({level: alignment summary}, {question id: view record})`` of one domain."""
    labels = option_labels(items)
    levels = {name: level_groups(scored, keys, min_respondents, weights, seed)
              for name, keys in LEVELS.items()}
    summary = {name: level_summary(groups, weights is not None, min_respondents, seed)
               for name, groups in levels.items()}
    countries: dict[str, dict[str, Any]] = {}
    for (country, qid), (record, _) in levels["country_question"].items():
        countries.setdefault(qid, {})[UNMAPPED if country is None else str(country)] = record
    view = {}
    for (qid,), group in split_groups(scored, ("question_id",)).items():
        qualified = levels["question"].get((qid,))
        record = (qualified[0] if qualified
                  else _without_alignment(group_record(group, weights, seed, alignment=False)[0]))
        codes = group_codes(group)
        asked_in = {item.country_code for item in group}
        view[qid] = {"text": (texts or {}).get(qid, ""),
                     "options": [[code, labels.get(qid, {}).get(code, "")] for code in codes],
                     "enough_respondents": qualified is not None, **record,
                     "countries": dict(sorted(countries.get(qid, {}).items())) if len(asked_in) > 1 else {}}
    return summary, view
