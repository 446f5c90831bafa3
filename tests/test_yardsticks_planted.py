"""A planted signal: answers follow age. Who finds it, who keeps the survey's structure?

90% of under-30s answer 1 and 90% of over-60s answer 4 to Q1 (the rest answer uniformly);
Q2 and sex carry no signal. The demographic model must find the age rule, a predictor that
always answers 1 must keep none of the structure, and one answering by the rule must keep it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from socbench.metrics.demographic import demographic_model
from socbench.metrics.headline import structure_sentence
from socbench.metrics.persona_groups import persona_groups
from socbench.metrics.structure import structure
from socbench.types import ScoredItem

CODES = ("1", "2", "3", "4")
N = 300


def planted(seed: int = 7):
    """(items with true answers, person id -> attributes, person id -> age)."""
    rng = np.random.default_rng(seed)
    people, ages, items = {}, {}, []
    for pid in range(N):
        age = int(rng.integers(18, 30) if pid % 2 else rng.integers(61, 90))
        ages[pid] = age
        people[pid] = {"Age of respondent": f"{age} years",
                       "Sex of respondent": str(rng.choice(["Male", "Female"])),
                       "Country": str(rng.choice(["Germany", "Japan"]))}
        groups = persona_groups(people[pid])
        country = "DE" if people[pid]["Country"] == "Germany" else "JP"
        rule = "1" if age < 30 else "4"
        q1 = rule if rng.random() < 0.9 else str(rng.integers(1, 5))
        for qid, true in (("Q1", q1), ("Q2", str(rng.integers(1, 5)))):
            items.append(ScoredItem(pid, qid, country, true, None, False, "no answer", False, CODES, None,
                                    groups))
    return items, people, ages


def answered(items: list[ScoredItem], answer) -> list[ScoredItem]:
    out = []
    for item in items:
        code = answer(item)
        out.append(replace(item, predicted_code=code, correct=code == item.true_code, parse_error=None))
    return out


def test_the_demographic_model_finds_the_age_rule() -> None:
    items, people, _ = planted()
    result = demographic_model(items, people)
    assert result.per_question["Q1"]["accuracy"] >= 0.8
    assert result.per_question["Q2"]["accuracy"] < 0.4


def test_always_one_keeps_no_structure() -> None:
    items, _, _ = planted()
    found = structure(answered(items, lambda item: "1"))
    real_age = next(p for p in found.pairs if (p.question_id, p.attribute) == ("Q1", "age_group"))
    assert real_age.real_v > 0.7
    assert all(p.simulated_v == 0 for p in found.pairs)
    assert found.gaps >= 1 and found.gaps_same_sign == 0
    assert found.heterogeneity == {"Q1": 0.0, "Q2": 0.0} and found.heterogeneity_ratio == 0
    assert math.isnan(found.profile_correlation)
    sentence = structure_sentence(found)
    assert "do not differ between groups at all" in sentence and "direction of 0 right" in sentence
    assert "not varied at all" in sentence


def test_answering_by_the_rule_keeps_the_structure() -> None:
    items, _, ages = planted()
    rng = np.random.default_rng(1)
    rule = {pid: "1" if age < 30 else "4" for pid, age in ages.items()}
    found = structure(answered(items, lambda item: rule[item.person_id] if item.question_id == "Q1"
                               else str(rng.integers(1, 5))))
    (pair,) = [p for p in found.pairs if (p.question_id, p.attribute) == ("Q1", "age_group")]
    (young_old,) = pair.gaps
    assert young_old[:2] == ("15-29", "60+") and young_old[2] < -2 and young_old[3] < -2
    assert found.profile_correlation == pytest.approx(1, abs=0.05)
    assert {p.attribute for p in found.pairs} == {"age_group", "sex", "country"}
    assert "follow the real ones closely" in structure_sentence(found)


def test_the_demographic_models_answers_get_the_same_numbers() -> None:
    items, people, _ = planted()
    found = structure(list(demographic_model(items, people).items))
    (pair,) = [p for p in found.pairs if (p.question_id, p.attribute) == ("Q1", "age_group")]
    assert pair.simulated_v > 0.9 and all(np.sign(g[2]) == np.sign(g[3]) for g in pair.gaps)
