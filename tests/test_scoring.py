"""The score stage: which items are scored, how failures count, and the domain's counts."""

from __future__ import annotations

import math

import pytest

from socbench.scoring import (
    NO_EXTRACTION,
    NOT_OFFERED,
    score_domain,
    score_items,
    summarize_domain,
)
from socbench.types import DomainData, Extraction, Item

OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"))


def item(pid: int, q: str, true: str | None, country: str | None = "DE", excluded: str | None = None,
         options=OPTS) -> Item:
    return Item(pid, q, country, options, true, country == "TW", excluded)


def ext(code: str | None, failure: str | None = None, dist=None) -> Extraction:
    return Extraction(code=code, failure=failure, distribution=dist)


ITEMS = [
    item(1, "V5", "1"),                                  # right
    item(1, "V6", "2"),                                  # wrong
    item(2, "V5", "3", country="TW"),                    # failed extraction
    item(2, "V6", "1", country="TW"),                    # no extraction at all
    item(3, "V5", "2", country=None),                    # unoffered code "7"
    item(3, "V6", None, country=None, excluded="missing code -9"),
    item(4, "V5", None, excluded="missing code -9"),
    item(4, "V6", "8", excluded="code not offered"),
]
EXTRACTIONS = {
    "1:V5": ext("1", dist={"1": 0.7, "2": 0.2, "3": 0.1}),
    "1:V6": ext("3"),
    "2:V5": ext(None, "no JSON object in the reply"),
    "3:V5": ext("7"),
    "4:V5": ext("1"),  # excluded item: its extraction must be ignored
}


def test_score_items_scores_only_scoreable_items_once() -> None:
    scored = score_items(ITEMS, EXTRACTIONS)
    assert [(s.person_id, s.question_id) for s in scored] == [(1, "V5"), (1, "V6"), (2, "V5"), (2, "V6"),
                                                              (3, "V5")]
    assert [s.correct for s in scored] == [True, False, False, False, False]
    assert [s.parse_error for s in scored] == [None, None, "no JSON object in the reply", NO_EXTRACTION,
                                               NOT_OFFERED]
    assert NOT_OFFERED == "answer not an offered code"
    assert scored[4].predicted_code == "7"  # kept for the detail file
    assert scored[0].distribution == {"1": 0.7, "2": 0.2, "3": 0.1}
    assert scored[2].country_specific and scored[2].offered_codes == ("1", "2", "3")


def test_unoffered_code_equal_to_a_code_of_another_country_is_wrong() -> None:
    only_two = (("1", "Yes"), ("2", "No"))
    scored = score_items([item(9, "V5", "1", options=only_two)], {"9:V5": ext("3")})
    assert not scored[0].correct and scored[0].parse_error == NOT_OFFERED


def test_summarize_domain_counts_and_metrics() -> None:
    scored = score_items(ITEMS, EXTRACTIONS)
    result = summarize_domain(1, "Citizenship", "org/model-135M", ITEMS, scored, {"Taiwan": 2}, 4)
    assert result.total_items == 8
    assert result.scoreable_items == 5
    assert result.excluded_by_reason == {"code not offered": 1, "missing code -9": 2}
    assert result.parse_failures == 3
    assert result.metrics["accuracy"] == pytest.approx(1 / 5)
    assert result.metrics["micro_f1"] == pytest.approx(1 / 5)
    assert result.metrics["parse_failure_rate"] == pytest.approx(3 / 5)
    de = result.per_country["DE"]
    assert {k: de[k] for k in ("n", "accuracy", "parse_failure_rate")} == pytest.approx(
        {"n": 2, "accuracy": 0.5, "parse_failure_rate": 0.0})
    assert de["respondents"] == 1 and de["baselines"]["uniform"] == pytest.approx(1 / 3)
    assert de["margin_over_best_baseline"] == pytest.approx(0.5 - de["best_baseline_accuracy"])
    assert result.per_country["TW"]["parse_failure_rate"] == pytest.approx(1.0)
    assert set(result.per_country) == {"DE", "TW", "unmapped"}
    assert result.baselines["uniform"] == pytest.approx(1 / 3)
    best = max(result.baselines.values())
    assert result.metrics["margin_over_best_baseline"] == pytest.approx(1 / 5 - best)
    assert result.unmapped_countries == {"Taiwan": 2} and result.interview_count == 4


def test_score_domain_records_respondents_interviewed() -> None:
    data = DomainData(1, "Citizenship", (), (), {"Taiwan": 2}, "issp_answer_citizenship.json")
    domain = score_domain(data, ITEMS, EXTRACTIONS, model="m", interview_count="all")
    scored, result = domain.items, domain.result
    assert len(scored) == 5 and result.interview_count == 4 and result.domain_name == "Citizenship"
    with pytest.raises(ValueError, match="interview_count=2"):
        score_domain(data, ITEMS, EXTRACTIONS, model="m", interview_count=2)


def test_scoreable_item_without_true_code_is_a_bug() -> None:
    with pytest.raises(ValueError, match="no true code"):
        score_items([item(1, "V5", None)], {})


def test_engine_errors_are_counted_apart_and_make_the_domain_incomplete() -> None:
    """Issue 12, seen 2: engine failures were counted as parse failures and scored as 0.0."""
    refused = "gave up after 7 attempts: connection error (ClientConnectorError: refused)"
    extractions = {**EXTRACTIONS, "1:V6": Extraction(None, engine_error=refused),
                   "2:V6": Extraction(None, engine_error="HTTP 404: model not found")}
    scored = score_items(ITEMS, extractions)
    assert [s.engine_error for s in scored] == [None, refused, None, "HTTP 404: model not found", None]
    assert [s.parse_error for s in scored] == [None, None, "no JSON object in the reply", None, NOT_OFFERED]
    assert not scored[1].correct
    result = summarize_domain(1, "Citizenship", "m", ITEMS, scored, {}, 4)
    assert (result.parse_failures, result.engine_errors) == (2, 2)
    assert result.parse_failure_reasons == {"no JSON object in the reply": 1, NOT_OFFERED: 1}
    assert result.engine_error_reasons == {refused: 1, "HTTP 404: model not found": 1}
    assert not result.complete and result.incomplete_reason == f"2 engine errors, first: {refused}"
    assert all(math.isnan(v) for v in result.metrics.values()) and "accuracy" in result.metrics
    assert result.accuracy_ci is None and result.per_country == {} and result.breakdowns == {}
    assert result.baselines["uniform"] == pytest.approx(1 / 3)  # answer-free: still there


def test_complete_domain_passes_and_keeps_raw_replies() -> None:
    extractions = {**EXTRACTIONS, "1:V6": Extraction("3", raw_reply='{"answer": "3"}')}
    scored = score_items(ITEMS, extractions)
    assert scored[1].raw_reply == '{"answer": "3"}' and scored[1].engine_error is None
    result = summarize_domain(1, "Citizenship", "m", ITEMS, scored, {}, 4)
    assert result.complete and result.incomplete_reason is None and result.engine_errors == 0
