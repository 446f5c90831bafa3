"""Each CP/MCP scoring rule against log-probabilities computed by hand on a tiny case.

The engine here is a test double that returns fixed numbers (the rules must be pure
functions of log-probs); it goes through the real plan, ``ask_engine`` and ``score_plan``.
"""

from __future__ import annotations

import math

import pytest

from socbench.mcq import scoring
from socbench.mcq.mcq_types import McqData, McqItem
from socbench.mcq.prompts import UNCONDITIONAL_CONTEXT, build_plan
from socbench.mcq.scoring import accuracies, score_plan
from socbench.pipeline import answer, request_count
from socbench.studies.mcq import plan_requests, read_answers
from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, PromptRequest

TEXTS = ("abcd", "cdefg", "g", "hi")
LP = (-4.0, -6.0, -3.0, -5.0)  # log P(" text" | question)
N_TOKENS = (2, 4, 1, 1)
UNCOND = (-3.0, -5.0, -2.5, -9.0)  # log P(" text" | "Answer:")
LETTER_P = (0.10, 0.30, 0.20, 0.05)  # P(" A") ... P(" D")
DIGIT_P = (0.25, 0.02, 0.01, 0.01)  # P(" 1") ... P(" 4")


def test_cp_rules_by_hand() -> None:
    assert scoring.cp_raw(LP) == (-4.0, -6.0, -3.0, -5.0)
    assert scoring.cp_ln_token(LP, N_TOKENS) == (-2.0, -1.5, -3.0, -5.0)
    assert scoring.cp_ln_char(LP, TEXTS) == pytest.approx((-1.0, -1.2, -3.0, -2.5))
    assert scoring.cp_un(LP, UNCOND) == (-1.0, -1.0, -0.5, 4.0)
    # each rule picks a different option on this case
    rules = (scoring.cp_raw(LP), scoring.cp_ln_token(LP, N_TOKENS), scoring.cp_ln_char(LP, TEXTS),
             scoring.cp_un(LP, UNCOND))
    assert [scoring.predict(s) for s in rules] == [2, 1, 0, 3]


def test_mcp_and_tolerance_by_hand() -> None:
    letters = [math.log(p) for p in LETTER_P]
    digits = [math.log(p) for p in DIGIT_P]
    assert scoring.predict(scoring.mcp(letters)) == 1  # B: 0.30
    tolerant = scoring.mcp_tolerance(letters, digits)
    assert [math.exp(s) for s in tolerant] == pytest.approx([0.35, 0.32, 0.21, 0.06])
    assert scoring.predict(tolerant) == 0  # A: 0.10 + 0.25 ("1") beats B: 0.30 + 0.02
    assert scoring.probability_mass(letters) == pytest.approx(0.65)
    assert scoring.probability_mass(letters + digits) == pytest.approx(0.94)


def test_ties_missing_scores_and_chance() -> None:
    assert scoring.predict((-1.0, -0.5, -0.5)) == 1  # first of the tied best
    assert scoring.predict((-1.0, None, -0.5)) is None
    assert scoring.predict((-1.0, math.nan)) is None
    assert scoring.predict(()) is None
    assert scoring.cp_ln_char([-2.0], [""]) == (-2.0,)  # an empty text divides by 1, not 0
    assert scoring.chance_accuracy([4, 4, 3, 5]) == pytest.approx((0.25 + 0.25 + 1 / 3 + 0.2) / 4)


class FixedNumbers:
    """An Engine that answers from tables of hand-set log-probs (no model)."""

    identity = {"backend": "fixed"}

    def __init__(self, conditional: dict[str, float], unconditional: dict[str, float],
                 options: dict[str, float]) -> None:
        self.conditional, self.unconditional, self.options = conditional, unconditional, options
        self.calls: list[str] = []

    def loglikelihood(self, requests: list[LoglikelihoodRequest],
                      on_result=None) -> list[LoglikelihoodResult]:
        self.calls.append("loglikelihood")
        out = []
        for i, r in enumerate(requests):
            text = r.continuation[1:]
            table = self.unconditional if r.context == UNCONDITIONAL_CONTEXT else self.conditional
            out.append(LoglikelihoodResult(r.key, table[text], N_TOKENS[TEXTS.index(text)], False))
            if on_result:
                on_result(i, out[-1])
        return out

    def option_logprobs(self, requests: list[PromptRequest], on_result=None) -> list[EngineResult]:
        self.calls.append("option_logprobs")
        out = [EngineResult(r.key, option_logprobs={c: self.options[c] for c in r.offered_codes})
               for r in requests]
        for i, result in enumerate(out):
            if on_result:
                on_result(i, result)
        return out

    def generate(self, requests, on_result=None):  # pragma: no cover - not used by MCQ
        raise AssertionError("MCQ never generates")

    def close(self) -> None:
        pass


def _data(gold: int) -> McqData:
    item = McqItem(id="q1", question="Which?", choices=tuple(zip("ABCD", TEXTS)), gold=gold, split="test")
    return McqData("tiny", "test", "", (item,), (), "memory")


@pytest.mark.parametrize("gold", [0, 1, 2, 3])
def test_plan_engine_and_scoring_end_to_end(gold: int) -> None:
    engine = FixedNumbers(dict(zip(TEXTS, LP)), dict(zip(TEXTS, UNCOND)),
                          {**{c: math.log(p) for c, p in zip("ABCD", LETTER_P)},
                           **{c: math.log(p) for c, p in zip("1234", DIGIT_P)}})
    plan = build_plan(_data(gold), ("cp", "mcp"), (0,), tolerance=True, seed=1)
    seen: list[int] = []
    answers = read_answers(plan, answer(engine, plan_requests(plan),
                                        on_result=lambda index, result: seen.append(index)))
    assert engine.calls == ["loglikelihood", "option_logprobs"]
    assert len(answers.loglikelihoods) == 8 and len(answers.options) == 1  # 4 CP + 4 CP-UN, 1 MCP
    assert len(seen) == request_count(plan_requests(plan)) == 9
    predictions = {p.method: p for p in score_plan(plan, answers.loglikelihoods, answers.options)}
    expected = {"cp_raw": 2, "cp_ln_token": 1, "cp_ln_char": 0, "cp_un": 3, "mcp": 1, "mcp_tolerance": 0}
    assert {m: p.prediction for m, p in predictions.items()} == expected
    assert predictions["cp_un"].scores == (-1.0, -1.0, -0.5, 4.0)
    assert predictions["mcp"].mass == pytest.approx(0.65)
    table = accuracies(list(predictions.values()))
    assert table == {0: {m: float(expected[m] == gold) for m in scoring.METHODS}}


def test_engine_error_counts_as_wrong() -> None:
    class Failing(FixedNumbers):
        def option_logprobs(self, requests, on_result=None):
            return [EngineResult(r.key, error="prompt too long") for r in requests]

    plan = build_plan(_data(1), ("mcp",), (0,), tolerance=False, seed=1)
    answers = read_answers(plan, answer(Failing({}, {}, {}), plan_requests(plan)))
    [pred] = score_plan(plan, answers.loglikelihoods, answers.options)
    assert pred.prediction is None and not pred.correct
    errors = {key: r.error for key, r in answers.options.items() if r.error}
    assert errors == {plan.prompts[0].mcp.key: "prompt too long"}
    assert accuracies([pred]) == {0: {"mcp": 0.0}}
