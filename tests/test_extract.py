"""Answer extraction: every defect of the original extractor, as a table of replies."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from socbench.extract import (
    EMPTY,
    FAILURES,
    NO_JSON,
    NO_LOGPROBS,
    NOT_A_CODE,
    NOT_OFFERED,
    TEMPLATE,
    extract,
    extract_all,
    extract_answer,
)
from socbench.types import EngineResult, PromptRequest

AGREE = [("1", "Strongly agree"), ("2", "Agree"), ("3", "Disagree"), ("-4", "Can't choose"), ("0", "None")]
PERSONS = [("1", "0-4 persons"), ("2", "5-9 persons"), ("3", "10-19 persons"), ("5", "50 persons or more")]

# (reply, offered options, expected code, expected failure)
CASES = [
    # echoed empty template, then the real answer: the last object wins
    ('Use this format: {"answer": "option_id"}\n{"answer": "2"}', AGREE, "2", None),
    ('{"answer": "option_id"}', AGREE, None, TEMPLATE),
    ('{"answer": "3"} (format was {"answer": "option_id"})', AGREE, "3", None),
    # value normalisation
    ('{"answer": " 1"}', AGREE, "1", None),
    ('{"answer": "01"}', AGREE, "1", None),
    ('{"answer": "2, Agree"}', AGREE, "2", None),
    ('{"answer": "2. Agree"}', AGREE, "2", None),
    ('{"answer": "2) Agree"}', AGREE, "2", None),
    ('{"answer": 2}', AGREE, "2", None),
    ('{"answer": 2.0}', AGREE, "2", None),
    ('{"answer": "2.0"}', AGREE, "2", None),
    ('{"answer": 2.5}', AGREE, None, NOT_A_CODE),
    ('{"answer": "2.5"}', AGREE, None, NOT_A_CODE),
    ('{"answer": "2nd"}', AGREE, None, NOT_A_CODE),
    ('{"answer": true}', AGREE, None, NOT_A_CODE),
    ('{"answer": ["2"]}', AGREE, None, NOT_A_CODE),
    ('{"answer": ""}', AGREE, None, NOT_A_CODE),
    ('{"answer": "0"}', AGREE, "0", None),
    # negative codes
    ('{"answer": "-4"}', AGREE, "-4", None),
    ('{"answer": -4}', AGREE, "-4", None),
    ('{"answer": "-4, Can\'t choose"}', AGREE, "-4", None),
    # exact labels (case- and whitespace-insensitive), and labels that start with another number
    ('{"answer": "strongly   AGREE"}', AGREE, "1", None),
    ('{"answer": "Agree strongly"}', AGREE, None, NOT_A_CODE),
    ('{"answer": "5-9 persons"}', PERSONS, "2", None),
    ('{"answer": "5-9"}', PERSONS, None, NOT_A_CODE),  # a range is not code 5
    # code not offered
    ('{"answer": "7"}', AGREE, None, NOT_OFFERED),
    ('{"answer": "4"}', AGREE, None, NOT_OFFERED),  # "-4" is offered, "4" is not
    # prose is never read as an answer
    ("I would pick 2 because I agree.", AGREE, None, NO_JSON),
    ("My answer: 2", AGREE, None, NO_JSON),
    ("Agree", AGREE, None, NO_JSON),
    ('{"reason": "I agree", "confidence": 2}', AGREE, None, NO_JSON),
    # empty replies
    (None, AGREE, None, EMPTY),
    ("", AGREE, None, EMPTY),
    ("  \n ", AGREE, None, EMPTY),
    # last object wins
    ('{"answer": "1"} Wait, on reflection: {"answer": "3"}', AGREE, "3", None),
    ('{"answer": "1"} then {"answer": "9"}', AGREE, None, NOT_OFFERED),
    # nested and fenced JSON, other keys
    ('{"response": {"answer": "3", "why": "x"}}', AGREE, "3", None),
    ('```json\n{\n  "answer": "2"\n}\n```', AGREE, "2", None),
    ('Sure!\n```\n{"option": 1}\n```', AGREE, "1", None),
    ('{"option_id": "-4"}', AGREE, "-4", None),
    ('{"Answer": "2"}', AGREE, "2", None),
    # explicit "answer": value outside valid JSON (fallback)
    ("{'answer': '2'}", AGREE, "2", None),
    ('{"answer": "2",}', AGREE, "2", None),
    ('{"answer": "3', AGREE, "3", None),  # cut off by max_tokens
    ('"answer": 1', AGREE, "1", None),
]


@pytest.mark.parametrize(("reply", "offered", "code", "failure"), CASES)
def test_extract_answer_table(reply, offered, code, failure) -> None:
    got = extract_answer(reply, offered)
    assert got == (code, failure)
    assert failure is None or any(failure.startswith(f) for f in FAILURES)


def test_codes_only_and_labels_off() -> None:
    codes = [c for c, _ in AGREE]
    assert extract_answer('{"answer": "Agree"}', codes) == (None, NOT_A_CODE)
    assert extract_answer('{"answer": "Agree"}', AGREE) == ("2", None)
    assert extract_answer('{"answer": "2"}', codes) == ("2", None)


def _request(mode: str = "generate", codes=("1", "2", "3")) -> PromptRequest:
    return PromptRequest(item_id="10000001:V5", messages=(), mode=mode, offered_codes=tuple(codes),
                         option_order=tuple(codes))


def test_engine_error_is_not_a_parse_failure_and_null_content_is() -> None:
    req = _request()
    got = extract(req, EngineResult(req.key, error="timeout after 60 s"))
    assert (got.code, got.failure, got.engine_error) == (None, None, "timeout after 60 s")
    assert extract(req, EngineResult(req.key, text=None)).failure == EMPTY


def test_raw_reply_is_kept() -> None:
    req = _request()
    reply = 'Sure! {"answer": "2"} is my pick.'
    got = extract(req, EngineResult(req.key, text=reply))
    assert (got.code, got.raw_reply) == ("2", reply)


def test_extract_generate_uses_labels_when_given() -> None:
    req = _request()
    result = EngineResult(req.key, text='{"answer": "Disagree"}')
    assert extract(req, result).failure == NOT_A_CODE
    assert extract(replace(req, options=AGREE[:3]), result).code == "3"  # the lines the request showed


def test_logprobs_distribution_matches_softmax() -> None:
    req = _request("logprobs")
    logprobs = {"1": -2.0, "2": -0.5, "3": -1.25, "9": 0.0}  # "9" is not offered: ignored
    got = extract(req, EngineResult(req.key, option_logprobs=logprobs))
    total = sum(math.exp(logprobs[c]) for c in "123")
    expected = {c: math.exp(logprobs[c]) / total for c in "123"}
    assert got.code == "2" and got.failure is None
    assert got.distribution.keys() == expected.keys()
    for c in expected:
        assert got.distribution[c] == pytest.approx(expected[c], rel=1e-12)
    assert sum(got.distribution.values()) == pytest.approx(1.0)


def test_logprobs_missing_codes_and_ties() -> None:
    req = _request("logprobs")
    got = extract(req, EngineResult(req.key, option_logprobs={"2": -1.0, "3": -1.0}))
    assert got.distribution == {"1": 0.0, "2": pytest.approx(0.5), "3": pytest.approx(0.5)}
    assert got.code == "2"  # ties go to the first offered code
    none = extract(req, EngineResult(req.key, option_logprobs={"9": -1.0}))
    assert (none.code, none.failure) == (None, NO_LOGPROBS)
    assert extract(req, EngineResult(req.key, text='{"answer": "1"}')).failure == NO_LOGPROBS


def test_extract_all_keys_by_item_and_checks_lengths() -> None:
    """Exact labels are read against the lines each request showed (``options``)."""
    a = PromptRequest(item_id="1:V5", messages=(), offered_codes=("1", "2"),
                      options=(("1", "Yes"), ("2", "No")))
    b = PromptRequest(item_id="2:V5", messages=(), offered_codes=("1", "2"))
    got = extract_all([a, b], [EngineResult(a.key, text='{"answer": "No"}'),
                               EngineResult(b.key, text='{"answer": "1"}')])
    assert (got["1:V5"].code, got["2:V5"].code) == ("2", "1")
    with pytest.raises(ValueError):
        extract_all([a, b], [EngineResult(a.key, text="x")])


def test_failure_reason_shared_with_scoring() -> None:
    from socbench.scoring import NOT_OFFERED as SCORING_NOT_OFFERED

    assert NOT_OFFERED == SCORING_NOT_OFFERED
