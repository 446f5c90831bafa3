"""``study.estimate_items``'s record as rows and sentences: what ``socbench estimate`` shows on the
terminal (the report reads the run's own, smaller ``study.gain_record``)."""

from __future__ import annotations

from typing import Any

from socbench.report.output import fmt

HEAD = ("domain", "question", "target", "n", "PPI [95% CI]", "classical CI", "gain [spread]", "coverage")
LEGEND = "\n".join((
    "n: labelled respondents (!: fewer than the n at which the intervals were measured to hold);",
    "gain: the respondents the classical interval would need to be as narrow, as a multiple of n;",
    "[spread]: the gain's middle 95% over the repeated splits (a spread, not a CI of this split's gain;",
    "  *: this split's gain lies outside it, the splits being other random draws);",
    "coverage: share of the repeated splits whose 95% interval held the full-sample value, PPI / classical."))


def _pair(values: list[float] | None, digits: int = 3) -> str:
    return "n/a" if not values else f"[{fmt(values[0], digits)}, {fmt(values[1], digits)}]"


def question_cells(record: dict[str, Any]) -> list[list[str]]:
    """One terminal row per question (``HEAD``): its headline target (the mean on a scale, else the first
    option's share) over all respondents, with the check over repeated splits; else why there is none."""
    return [[domain["domain"], q["question_id"], q["target"], *_estimate_cells(q)]
            for domain in record["domains"] for q in domain["questions"]]


def _estimate_cells(q: dict[str, Any]) -> list[str]:
    if not q["estimates"]:
        return [str(q["labelled"]), q.get("note") or "", "", "", ""]
    head = q["estimates"][0]
    spread = head["gain_spread"]
    outside = bool(spread) and not spread[0] <= head["gain"] <= spread[1]
    return [f"{q['labelled']}{'!' * bool(q.get('warning'))}", f"{fmt(head['estimate'])} {_pair(head['ci'])}",
            _pair(head["classical_ci"]), f"{fmt(head['gain'], 2)}{'*' * outside} {_pair(spread, 2)}",
            f"{fmt(head['coverage'], 2)} / {fmt(head['classical_coverage'], 2)}"]


def gain_sentence(title: str, median: float, spread: list[float] | None, repeats: int, labelled: int,
                  respondents: int) -> tuple[str, str]:
    """The sentence to quote, and the spread behind it. A gain is claimed only where the whole middle
    95% of the median gain over the repeated splits (its uncertainty) lies above 1; else there is no
    measurable gain. Where this split's median lies outside that spread (of other splits), it says so."""
    sample = f"n = {labelled} of {respondents} respondents labelled"
    behind = f"its middle 95% over {repeats} random splits {_pair(spread, 2)}"
    if spread and not spread[0] <= median <= spread[1]:
        behind += " (this split's median lies outside it: the spread is of other random splits)"
    if spread and spread[0] > 1:
        return f"{title}: these answers are worth {fmt(median, 1)} x your sample ({sample}).", behind
    return (f"{title}: no measurable gain from these answers (median gain {fmt(median, 2)}; {sample}).",
            behind + ", reaches 1")


def domain_lines(record: dict[str, Any]) -> list[str]:
    """Per domain: the sentence a researcher can quote, the check behind it, the plan and the warning."""
    return [line for d in record["domains"] for line in _domain_lines(d, record["settings"]["repeats"])]


def _domain_lines(d: dict[str, Any], repeats: int) -> list[str]:
    gain = d["gain"]
    if not gain["questions"]:
        return [f"{d['domain']}: no question has enough labelled respondents for an estimate."]
    sentence, behind = gain_sentence(d["domain"], gain["median"], gain["median_spread"], repeats,
                                     d["labelled"], d["respondents"])
    return [sentence, f"  median gain over {gain['questions']} questions {fmt(gain['median'], 2)} "
                      f"(quartiles {fmt(gain['q25'], 2)}-{fmt(gain['q75'], 2)}); {behind}",
            f"  coverage of the 95% intervals over repeated splits: PPI {fmt(d['coverage'], 3)}, "
            f"classical {fmt(d['classical_coverage'], 3)} (nominal 0.95)",
            *(["  budget: " + plan_text(d["plan"])] if d.get("plan") else []),
            *(["  warning: " + d["warning"]] if d.get("warning") else [])]


def plan_text(plan: dict[str, float]) -> str:
    if not plan["model_answers"]:
        return (f"spend it all on {plan['humans']:.0f} respondents: the model's answers would not narrow "
                "the interval enough to pay for themselves")
    return (f"{plan['humans']:.0f} respondents + {plan['model_answers']:.0f} model answers (cost "
            f"{plan['cost']:.2f}) = {plan['effective_n']:.0f} effective respondents, "
            f"{fmt(plan['gain_over_humans_only'], 2)} x the {plan['humans_only_n']:.0f} it buys alone")
