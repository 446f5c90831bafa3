"""Scoring rules: pure functions from log-probabilities to per-option scores and predictions (each
method's definition: ``DEFINITIONS``; ``mcp_tolerance`` adds the letter's and the digit's probabilities:
disjoint tokens). The prediction is the highest score (the first on ties); a missing score (an engine
error) makes it None, which counts as wrong.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from socbench.mcq.datasets import letters
from socbench.mcq.mcq_types import ItemPrompts, McqAnswers, McqPlan, McqScores, Prediction
from socbench.mcq.prompts import MCP_ANSWER_PREFIX, UNCONDITIONAL_CONTEXT, digits
from socbench.types import EngineResult, LoglikelihoodResult, VariantResult

METHODS = ("cp_raw", "cp_un", "cp_ln_token", "cp_ln_char", "mcp", "mcp_tolerance")
COLUMNS = {"cp_raw": "CP-RAW", "cp_un": "CP-UN", "cp_ln_token": "CP-LN", "cp_ln_char": "CP-LN-char",
           "mcp": "MCP", "mcp_tolerance": "MCP-Tolerance"}
DEFINITIONS = {
    "CP-RAW": "sum of log P(' option text' | 'Question: q\\nAnswer:') (lm-evaluation-harness acc)",
    "CP-UN": f"CP-RAW minus log P(' option text' | '{UNCONDITIONAL_CONTEXT}')",
    "CP-LN": "CP-RAW divided by the option's token count (per-token length normalisation)",
    "CP-LN-char": "CP-RAW divided by the option text's character count (lm-evaluation-harness acc_norm)",
    "MCP": f"log P('{MCP_ANSWER_PREFIX}<letter>' | question, lettered options, 'Answer:')",
    "MCP-Tolerance": "log(P(' <letter>') + P(' <index digit>')): naming the option's digit also counts",
}
ENGINE_METHODS = ("mcp", "mcp_tolerance")  # scored from option requests: the ones an engine error leaves out
Scores = tuple[float | None, ...]


def cp_raw(logprobs: Sequence[float]) -> Scores:
    return tuple(float(lp) for lp in logprobs)


def cp_ln_token(logprobs: Sequence[float], n_tokens: Sequence[int]) -> Scores:
    return tuple(lp / max(1, n) for lp, n in zip(logprobs, n_tokens, strict=True))


def cp_ln_char(logprobs: Sequence[float], texts: Sequence[str]) -> Scores:
    return tuple(lp / max(1, len(text)) for lp, text in zip(logprobs, texts, strict=True))


def cp_un(logprobs: Sequence[float], unconditional: Sequence[float]) -> Scores:
    return tuple(lp - u for lp, u in zip(logprobs, unconditional, strict=True))


def mcp(letter_logprobs: Sequence[float | None]) -> Scores:
    return tuple(None if lp is None else float(lp) for lp in letter_logprobs)


def mcp_tolerance(letter_logprobs: Sequence[float | None], digit_logprobs: Sequence[float | None]) -> Scores:
    return tuple(None if a is None or b is None else float(np.logaddexp(a, b))
                 for a, b in zip(letter_logprobs, digit_logprobs, strict=True))


def predict(scores: Scores) -> int | None:
    """Index of the highest score, the first on ties; None if any score is missing or NaN."""
    if not scores or any(s is None or math.isnan(s) for s in scores):
        return None
    return int(np.argmax(np.asarray(scores, dtype=float)))


def probability_mass(logprobs: Sequence[float | None]) -> float | None:
    """Total probability on the scored codes: how much the model answers in the offered form."""
    if not logprobs or any(lp is None for lp in logprobs):
        return None
    return float(np.exp(np.asarray(logprobs, dtype=float)).sum())


def _prediction(p: ItemPrompts, method: str, scores: Scores, mass: float | None = None) -> Prediction:
    return Prediction(p.item.id, p.k_shot, method, p.item.gold, scores, predict(scores), p.shot_ids, mass)


def cp_predictions(p: ItemPrompts, answers: Mapping[str, LoglikelihoodResult]) -> list[Prediction]:
    cond = [answers[r.key] for r in p.cp]
    lps, uncond = [r.logprob for r in cond], [answers[r.key].logprob for r in p.uncond]
    return [_prediction(p, "cp_raw", cp_raw(lps)), _prediction(p, "cp_un", cp_un(lps, uncond)),
            _prediction(p, "cp_ln_token", cp_ln_token(lps, [r.n_tokens for r in cond])),
            _prediction(p, "cp_ln_char", cp_ln_char(lps, p.item.texts))]


def mcp_predictions(p: ItemPrompts, result: EngineResult, tolerance: bool) -> list[Prediction]:
    got = result.option_logprobs or {}
    n = len(p.item.choices)
    letter = [got.get(code) for code in letters(n)]
    out = [_prediction(p, "mcp", mcp(letter), probability_mass(letter))]
    if tolerance:
        digit = [got.get(code) for code in digits(n)]
        scores = mcp_tolerance(letter, digit)
        out.append(_prediction(p, "mcp_tolerance", scores, probability_mass([*letter, *digit])))
    return out


def score_plan(plan: McqPlan, loglikelihoods: Mapping[str, LoglikelihoodResult],
               options: Mapping[str, EngineResult]) -> list[Prediction]:
    """Predictions for every (item, k, method) of the plan, from the engine's answers by key."""
    predictions: list[Prediction] = []
    for p in plan.prompts:
        if p.cp:
            predictions += cp_predictions(p, loglikelihoods)
        if p.mcp is not None:
            predictions += mcp_predictions(p, options[p.mcp.key], plan.tolerance)
    return predictions


def score_variant(p: ItemPrompts, result: EngineResult) -> VariantResult:
    """The MCP rule on one circular variant: the displayed letter, or None with the reason."""
    [pred] = mcp_predictions(p, result, tolerance=False)
    letter = None if pred.prediction is None else p.variant.shown[pred.prediction]
    reason = result.error or (None if letter is not None else "no log-probability for every letter")
    return VariantResult.of(p.variant, letter, reason)


def score_mcq(plan: McqPlan, answers: McqAnswers) -> McqScores:
    """The ``score`` stage: every prediction of the plan and each k's circular variant results."""
    variants = {k: tuple(score_variant(p, answers.options[p.mcp.key]) for p in plan.variants if p.k_shot == k)
                for k in plan.k_shots} if plan.variants else {}
    return McqScores(tuple(score_plan(plan, answers.loglikelihoods, answers.options)), variants)


def _means(values: Iterable[tuple[int, str, float]]) -> dict[int, dict[str, float]]:
    """``{k: {method: mean}}`` of (k, method, value) triples, in sorted order."""
    found: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for k, method, value in values:
        found[k][method].append(value)
    return {k: {m: sum(v) / len(v) for m, v in sorted(row.items())} for k, row in sorted(found.items())}


def accuracies(predictions: Sequence[Prediction]) -> dict[int, dict[str, float]]:
    """``{k: {method: accuracy}}`` over the predictions (a missing prediction is wrong)."""
    table = _means((pred.k_shot, pred.method, pred.correct) for pred in predictions)
    return {k: {m: table[k][m] for m in METHODS if m in table[k]} for k in sorted(table)}


def chance_accuracy(n_options: Sequence[int]) -> float:
    """Expected accuracy of a uniform random guess: the mean of 1/n over items."""
    return float(np.mean([1.0 / n for n in n_options])) if n_options else math.nan


def reported_accuracies(predictions: Sequence[Prediction],
                        incomplete: str | None) -> dict[int, dict[str, float]]:
    """``accuracies``, less MCP's columns when requests failed: a wrong number is worse than none."""
    return {k: {m: v for m, v in row.items() if incomplete is None or m not in ENGINE_METHODS}
            for k, row in accuracies(predictions).items()}


def mean_mass(predictions: Sequence[Prediction]) -> dict[int, dict[str, float]]:
    """Mean probability MCP puts on the scored codes, per k and method (format-following)."""
    table = _means((pred.k_shot, pred.method, pred.mass) for pred in predictions if pred.mass is not None)
    return {k: {COLUMNS[m]: mass for m, mass in row.items()} for k, row in table.items()}
