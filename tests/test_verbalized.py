"""Verbalized distributions: the reply's JSON read, validated and normalised; the item's answer picked."""

from __future__ import annotations

import json
import re

import pytest

from socbench.extract import EMPTY
from socbench.verbalized import (
    ALL_ZERO,
    NEGATIVE,
    NO_DISTRIBUTION,
    NOT_A_SHARE,
    parse_distribution,
    pick,
    regex,
    schema,
)

AGREE = [("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("-4", "Can't choose")]


@pytest.mark.parametrize(("reply", "expected", "note"), [
    ('{"1": 40, "2": 30, "3": 20, "-4": 10}', {"1": .4, "2": .3, "3": .2, "-4": .1}, None),
    ('Here: {"1": "50%", "2": 25.0, "3": "25", "-4": 0}', {"1": .5, "2": .25, "3": .25, "-4": 0}, None),
    ('{"1": 1, "2": 1, "3": 1, "-4": 1}', {c: .25 for c, _ in AGREE}, "shares summed to 4, normalised"),
    ('{"Agree": 60, "Disagree": 40}', {"1": .6, "2": 0, "3": .4, "-4": 0}, "no share for 2, -4 (0)"),
    ('{"distribution": {"1": 70, "2": 10, "3": 10, "-4": 10}}', {"1": .7, "2": .1, "3": .1, "-4": .1}, None),
    ('{"1": 99.7, "2": 0, "3": 0, "-4": 0}', {"1": 1, "2": 0, "3": 0, "-4": 0}, None),  # rounding: no note
    ('{"1": 10, "2": 10, "3": 10, "-4": 10, "total": 40}', {c: .25 for c, _ in AGREE},
     "shares summed to 40, normalised"),  # a key naming no option is not a share
])
def test_parses_and_normalises(reply: str, expected: dict[str, float], note: str | None) -> None:
    dist, said = parse_distribution(reply, AGREE)
    assert dist == pytest.approx(expected) and list(dist) == ["1", "2", "3", "-4"]
    assert said == note


@pytest.mark.parametrize(("reply", "failure"), [
    (None, EMPTY), ("  ", EMPTY), ("40% agree", NO_DISTRIBUTION), ('{"answer": "1"}', NO_DISTRIBUTION),
    ('{"1": "many", "2": 10}', NOT_A_SHARE), ('{"1": true}', NOT_A_SHARE), ('{"1": [40]}', NOT_A_SHARE),
    ('{"1": 60, "2": -10, "3": 50}', NEGATIVE), ('{"1": 0, "2": 0}', ALL_ZERO),
])
def test_failures_say_why(reply: str | None, failure: str) -> None:
    assert parse_distribution(reply, AGREE) == (None, failure)


def test_schema_and_regex_describe_the_same_reply() -> None:
    labels = [code for code, _ in AGREE]
    reply = '{"1": 40, "2": 30, "3": 100, "-4": 0}'
    assert re.fullmatch(regex(labels), reply)
    assert not re.fullmatch(regex(labels), '{"1": 101, "2": 30, "3": 20, "-4": 0}')
    assert set(schema(labels)["required"]) == set(json.loads(reply))
    assert schema(labels)["properties"]["-4"] == {"type": "integer", "minimum": 0, "maximum": 100}


def test_pick_mode_breaks_ties_by_survey_order_and_draws_are_seeded() -> None:
    assert pick({"1": .2, "2": .4, "3": .4}) == "2"
    dist = {"1": .5, "2": .5}
    draws = [pick(dist, "draw", 7, f"{i}:Q1") for i in range(200)]
    assert draws == [pick(dist, "draw", 7, f"{i}:Q1") for i in range(200)]  # a rerun draws the same
    assert 60 < draws.count("1") < 140
    assert pick({"1": 0.0, "2": 1.0}, "draw", 1, "x") == "2"
