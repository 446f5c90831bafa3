"""Verbalized distributions: the reply's JSON read, validated and normalised; the item's answer picked."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from socbench.config import RunConfig, from_flat
from socbench.engines._chat import constraint_regex
from socbench.engines.openai_api import OpenAIEngine, OpenAISettings
from socbench.errors import ConfigError
from socbench.extract import EMPTY
from socbench.prompts.persona import (
    VERBALIZED_INSTRUCTION,
    VERBALIZED_INSTRUCTION_NO_PERSONA,
    PromptSettings,
    build_prompt,
)
from socbench.types import EngineResult, Item, Message, PromptRequest, Question, Respondent, SamplingSettings
from socbench.verbalized import (
    ALL_ZERO,
    NEGATIVE,
    NO_DISTRIBUTION,
    NOT_A_SHARE,
    extraction,
    parse_distribution,
    pick,
    record,
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


def _request(text: str | None = None) -> tuple[PromptRequest, EngineResult]:
    codes = tuple(code for code, _ in AGREE)
    request = PromptRequest("7:Q1", (Message("user", "?"),), mode="verbalized", offered_codes=codes,
                            option_order=codes, structured=True, options=tuple(AGREE))
    return request, EngineResult(request.key, text=text)


def test_a_reply_becomes_the_item_s_distribution_answer_and_note() -> None:
    request, result = _request('{"1": 1, "2": 2, "3": 1, "-4": 0}')
    found = extraction(request, result)
    assert (found.code, found.failure, found.note) == ("2", None, "shares summed to 4, normalised")
    assert found.distribution == {"1": .25, "2": .5, "3": .25, "-4": 0} and found.raw_reply == result.text
    assert extraction(request, replace(result, text="no idea")).failure == NO_DISTRIBUTION
    failed = extraction(request, EngineResult(request.key, error="HTTP 500"))
    assert (failed.code, failed.failure, failed.engine_error) == (None, None, "HTTP 500")
    notes = {"a": found, "b": extraction(request, replace(result, text='{"1": 100}'))}
    assert record(notes, "mode", 42) == {"verbalized_normalised": 2.0}
    assert record({}, "draw", 7) == {"verbalized_normalised": 0.0, "verbalized_draw_seed": 7.0}


def test_prompts_ask_for_percentages_in_the_shown_order_with_room_to_answer() -> None:
    question = Question("Q1", "Is it fine?", dict(AGREE))
    person = Respondent(1, "Germany", "DE", {"Sex": "Female"}, {"Q1": "2"})
    item = Item(1, "Q1", "DE", tuple(AGREE), "2", False)
    settings = PromptSettings(mode="verbalized", structured=True, sampling=SamplingSettings(max_tokens=16))
    request = build_prompt(item, person, question, settings)
    system, user = (m.content for m in request.messages)
    assert system.startswith(VERBALIZED_INSTRUCTION) and '"Sex": "Female"' in system
    assert user.endswith('{"1": <percent>, "2": <percent>, "3": <percent>, "-4": <percent>}')
    assert (request.mode, request.structured, request.answer_prefix) == ("verbalized", True, "")
    assert request.sampling.max_tokens == 12 * 4 + 8  # 16 cannot hold four shares
    shown = settings.model_copy(update={"shuffle_options": True, "seed": 1})
    shuffled = build_prompt(item, person, question, shown)
    assert shuffled.option_order == ("-4", "1", "3", "2")  # keys in the order shown, prompt and constraint
    assert shuffled.messages[1].content.endswith('{"-4": <percent>, "1": <percent>, "3": <percent>, '
                                                 '"2": <percent>}')
    assert constraint_regex(shuffled) == regex(("-4", "1", "3", "2"))
    control = build_prompt(item, person, question, settings.model_copy(update={"include_persona": False}))
    assert control.messages[0].content == VERBALIZED_INSTRUCTION_NO_PERSONA


def test_the_engine_sends_the_distribution_constraint() -> None:
    request, _ = _request()
    def body(**settings: str) -> dict:
        engine = OpenAIEngine(OpenAISettings(api_base=["http://127.0.0.1:9"], model="m", **settings))
        return engine._generate_call(request).body  # what would be sent (nothing is)

    assert body()["structured_outputs"] == {"regex": regex(("1", "2", "3", "-4"))}
    sent = body(structured_mode="json_schema")["response_format"]["json_schema"]
    assert sent["schema"] == schema(("1", "2", "3", "-4")) and sent["strict"] is True


@pytest.mark.parametrize(("flags", "needle"), [
    ({"mode": "verbalized", "circular": "circular"}, "--mode verbalized: not with --circular"),
    ({"mode": "verbalized", "samples": 3, "temperature": 1}, "not with --circular or --mode verbalized"),
    ({"verbalized_answer": "draw"}, "--verbalized_answer applies only to --mode verbalized"),
])
def test_settings_that_do_not_go_together_are_one_line(flags: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        from_flat(RunConfig, flags)


def test_run_names_keep_verbalized_runs_apart() -> None:
    assert from_flat(RunConfig, {"mode": "verbalized", "model": "m"}).run_name == "m-verbalized"
    drawn = from_flat(RunConfig, {"mode": "verbalized", "verbalized_answer": "draw", "model": "m"})
    assert drawn.run_name == "m-verbalized-draw"


def test_a_numeric_request_in_a_verbalized_run_is_read_as_a_number():
    """A numeric question of a verbalized run is asked for a number (not a distribution): read as one."""
    from socbench.types import EngineResult, PromptRequest
    from socbench.verbalized import extraction

    request = PromptRequest(item_id="1:hours", messages=(), numeric=(0.0, 80.0))
    got = extraction(request, EngineResult(key=request.key, text='{"answer": 38}'))
    assert got.failure is None and got.distribution is None and float(got.code) == 38.0
