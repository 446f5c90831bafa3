"""The yardsticks wired into the score stage, the result files, the summary and the leaderboard.

A planted domain built here (answers to V5 follow age; V6 is noise) is scored in-process by
``score_domain``; each number that reaches a file is checked against what the test computes
itself (SimBench's score with pandas, the strongest-baseline margin) or against the planted rule.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from socbench.log.summary import summary_payload
from socbench.log.write import write_domain_files
from socbench.metrics.demographic import demographic_model
from socbench.report.html import leaderboard_markdown
from socbench.report.leaderboard import leaderboard
from socbench.report.markdown import domain_markdown, summary_markdown, write_run_summary
from socbench.scoring import score_domain, summarize_domain
from socbench.types import DomainData, DomainResult, Extraction, Item, Question, Respondent
from socbench.yardsticks import DEMOGRAPHIC, shown_attributes

OPTIONS = {"1": "Very", "2": "Fairly", "3": "Not very", "4": "Not at all"}
N = 300
STRUCTURE_KEYS = {"profile_correlation", "mean_real_v", "mean_simulated_v", "gaps", "gaps_same_sign",
                  "sign_agreement", "heterogeneity_ratio", "pairs"}


def planted_domain(seed: int = 7) -> DomainData:
    """300 respondents, half under 30 and half over 60: 90% of the young answer V5 with 1, 90% of
    the old with 4 (the rest uniformly); V6 is uniform noise. An id attribute is never shown."""
    rng = np.random.default_rng(seed)
    people = []
    for pid in range(1, N + 1):
        age = int(rng.integers(18, 30) if pid % 2 else rng.integers(61, 90))
        country, code = [("Germany", "DE"), ("Japan", "JP")][int(rng.integers(2))]
        rule = "1" if age < 30 else "4"
        v5 = rule if rng.random() < 0.9 else str(rng.integers(1, 5))
        sex = str(rng.choice(["Male", "Female"]))
        attributes = {"Country Prefix ISO 3166": country, "Sex of Respondent": sex,
                      "Age of respondent": f"{age} years", "ID Number of Respondent": str(pid)}
        people.append(Respondent(pid, country, code, attributes, {"V5": v5, "V6": str(rng.integers(1, 5))}))
    questions = tuple(Question(q, f"How important is thing {q}?", OPTIONS) for q in ("V5", "V6"))
    return DomainData(1, "Citizenship", questions, tuple(people), {}, "built in the test")


def items_of(data: DomainData) -> list[Item]:
    return [Item(p.person_id, q.id, p.country_code, tuple(OPTIONS.items()), p.answers[q.id], False)
            for p in data.respondents for q in data.questions]


def by_rule(data: DomainData) -> dict[str, Extraction]:
    """The LLM's answers: V5 by the planted age rule, V6 always 2."""
    age = {p.person_id: int(p.attributes["Age of respondent"].split()[0]) for p in data.respondents}
    rule = {pid: "1" if years < 30 else "4" for pid, years in age.items()}
    return {item.item_id: Extraction(rule[item.person_id] if item.question_id == "V5" else "2")
            for item in items_of(data)}


def always_one(data: DomainData) -> dict[str, Extraction]:
    return {item.item_id: Extraction("1") for item in items_of(data)}


def simbench_by_hand(data: DomainData, answers: dict[str, Extraction]) -> float:
    """SimBench's score: rows = country x question; each row 100 (1 - TV(model, people) / mean TV(uniform,
    people)), averaged."""
    frame = pd.DataFrame([(i.country_code, i.question_id, i.true_code, answers[i.item_id].code)
                          for i in items_of(data)], columns=["country", "q", "true", "llm"])
    tv_model, tv_uniform = [], []
    for _, row in frame.groupby(["country", "q"]):
        human = row["true"].value_counts(normalize=True).reindex(list(OPTIONS), fill_value=0)
        model = row["llm"].value_counts(normalize=True).reindex(list(OPTIONS), fill_value=0)
        tv_model.append(0.5 * (human - model).abs().sum())
        tv_uniform.append(0.5 * (human - 0.25).abs().sum())
    return float(np.mean([100 * (1 - t / np.mean(tv_uniform)) for t in tv_model]))


@pytest.fixture(scope="module")
def data() -> DomainData:
    return planted_domain()


def test_the_demographic_model_sees_exactly_the_persona(data: DomainData) -> None:
    shown = shown_attributes(data)
    assert shown[1] == {"Country": "Japan" if data.respondents[0].country_code == "JP" else "Germany",
                        "Sex of Respondent": data.respondents[0].attributes["Sex of Respondent"],
                        "Age of respondent": data.respondents[0].attributes["Age of respondent"]}
    assert shown_attributes(data, include_persona=False) == {p.person_id: {} for p in data.respondents}


def test_score_domain_writes_every_yardstick(data: DomainData) -> None:
    result = score_domain(data, items_of(data), by_rule(data), model="m").result
    ys = result.yardsticks
    assert set(ys) == {DEMOGRAPHIC, "simbench", "structure"}
    demo = ys[DEMOGRAPHIC]
    assert {"accuracy", "macro_f1", "per_question_macro_f1", "learner", "folds", "fallbacks",
            "distributions", "per_question"} == set(demo)
    assert demo["per_question"]["V5"]["accuracy"] >= 0.8 and demo["per_question"]["V6"]["accuracy"] < 0.4
    assert demo["learner"] == "logistic" and demo["folds"] == 3 and demo["fallbacks"] == {}
    assert set(demo["distributions"]) == {"V5", "V6"}
    assert sum(demo["distributions"]["V5"].values()) == pytest.approx(1)
    # a baseline like the others: the margin is over the strongest, here the demographic model
    assert result.baselines[DEMOGRAPHIC] == demo["accuracy"]
    assert max(result.baselines.values()) == demo["accuracy"]
    assert result.metrics["margin_over_best_baseline"] == pytest.approx(result.metrics["accuracy"]
                                                                        - demo["accuracy"])
    assert set(ys["simbench"]) == {"model", DEMOGRAPHIC, "questions", "norm"}
    assert ys["simbench"]["questions"] == 4  # 2 countries x 2 questions
    assert ys["simbench"]["model"] == pytest.approx(simbench_by_hand(data, by_rule(data)))
    model, demographic = ys["structure"]["model"], ys["structure"][DEMOGRAPHIC]
    assert set(model) == set(demographic) == STRUCTURE_KEYS
    assert model["profile_correlation"] == pytest.approx(1, abs=0.05)
    assert model["gaps"] >= 1 and model["gaps_same_sign"] == model["gaps"]
    assert demographic["gaps_same_sign"] == demographic["gaps"] >= 1


def test_no_persona_gets_an_intercept_model(data: DomainData) -> None:
    result = score_domain(data, items_of(data), by_rule(data), model="m", include_persona=False).result
    per_question = result.yardsticks[DEMOGRAPHIC]["per_question"]
    assert per_question["V5"]["accuracy"] < 0.6  # each fold's answer shares, blind to age
    # the same answers, scored as a persona run, get a demographic model that sees age
    assert score_domain(data, items_of(data), by_rule(data), model="m").result.yardsticks[DEMOGRAPHIC][
        "per_question"]["V5"]["accuracy"] >= 0.8


def test_without_attributes_or_answers_there_are_no_yardsticks(data: DomainData) -> None:
    items = items_of(data)
    scored = score_domain(data, items, by_rule(data), model="m").items
    assert summarize_domain(1, "Citizenship", "m", items, scored, {}, N).yardsticks == {}
    failed = dict(by_rule(data), **{items[0].item_id: Extraction(None, engine_error="HTTP 500")})
    incomplete = score_domain(data, items, failed, model="m").result
    assert not incomplete.complete and incomplete.yardsticks == {} and DEMOGRAPHIC not in incomplete.baselines


def test_files_summary_and_leaderboard_carry_them(data: DomainData, tmp_path: Path) -> None:
    rule = score_domain(data, items_of(data), by_rule(data), model="rule").result
    flat = score_domain(data, items_of(data), always_one(data), model="flat")
    detailed, metrics = write_domain_files(tmp_path, flat.result, flat.items)
    written = json.loads(detailed.read_text())["yardsticks"]
    assert written == json.loads(metrics.read_text())["yardsticks"]
    model = written["structure"]["model"]
    assert model["profile_correlation"] is None  # NaN as null: nothing varies
    assert model["mean_simulated_v"] == 0 and model["heterogeneity_ratio"] == 0
    assert model["gaps"] >= 1 and model["gaps_same_sign"] == 0
    write_run_summary(tmp_path, "flat", [flat.result])
    payload = summary_payload([rule])
    row = payload["domains"][0]
    assert row["simbench_score"] == rule.yardsticks["simbench"]["model"]
    assert row["demographic_model_accuracy"] == rule.yardsticks[DEMOGRAPHIC]["accuracy"]
    assert row["structure_correlation"] == rule.yardsticks["structure"]["model"]["profile_correlation"]
    assert payload["mean"]["simbench_score"] == pytest.approx(row["simbench_score"])
    sb = rule.yardsticks["simbench"]
    assert f"| SimBench score (model / demographic model) | {sb['model']:.4f} / {sb[DEMOGRAPHIC]:.4f} |" \
        in domain_markdown(rule)
    head = summary_markdown(payload).splitlines()[2]
    assert "| SimBench | demographic model | structure correlation | heterogeneity ratio |" in head
    board = leaderboard(tmp_path, n_resamples=50)
    (overall,) = board.overall
    assert overall["simbench_score"] == pytest.approx(flat.result.yardsticks["simbench"]["model"])
    assert overall["heterogeneity_ratio"] == 0 and math.isnan(overall["structure_correlation"])
    assert board.domains[0]["best_baseline"] == DEMOGRAPHIC  # read back with the other baselines
    text = leaderboard_markdown(board)
    assert "## Yardsticks" in text and "| all domains | flat |" in text


def test_the_survey_design_weights_enter_the_fit(data: DomainData) -> None:
    weighted = replace(data, respondents=tuple(replace(p, weight=1.0 if p.person_id % 2 else 3.0)
                                               for p in data.respondents))
    scored = score_domain(weighted, items_of(weighted), by_rule(weighted), model="m")
    weights = {p.person_id: p.weight for p in weighted.respondents}
    expected = demographic_model(scored.items, shown_attributes(weighted), weights=weights)
    unweighted = demographic_model(scored.items, shown_attributes(weighted))
    assert scored.result.yardsticks[DEMOGRAPHIC]["distributions"] == expected.distributions
    assert expected.distributions != unweighted.distributions


def test_a_rerun_reads_them_back_and_another_model_shares_the_demographic_fit(
        data: DomainData, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socbench.yardsticks as yardsticks

    fits: list[int] = []
    fit = yardsticks.fit_demographic
    monkeypatch.setattr(yardsticks, "fit_demographic", lambda *a, **k: fits.append(1) or fit(*a, **k))
    first = score_domain(data, items_of(data), by_rule(data), model="m", cache=tmp_path).result
    rerun = score_domain(data, items_of(data), by_rule(data), model="m", cache=tmp_path).result
    assert as_json(rerun) == as_json(first)  # yardsticks, baselines, per-question view: read back
    flat = score_domain(data, items_of(data), always_one(data), model="flat", cache=tmp_path).result
    assert flat.yardsticks[DEMOGRAPHIC] == first.yardsticks[DEMOGRAPHIC]  # the data's alone
    assert flat.yardsticks["structure"]["model"] != first.yardsticks["structure"]["model"]
    assert fits == [1]  # one demographic fit: the rerun and the other model read it back
    uncached = score_domain(data, items_of(data), by_rule(data), model="m").result
    assert as_json(uncached) == as_json(first) and fits == [1, 1]


def as_json(result: DomainResult) -> str:
    return json.dumps(asdict(result))
