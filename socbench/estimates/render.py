"""``study.estimate_items``'s record as rows and sentences: what ``socbench estimate`` shows on the
terminal (the report reads the run's own, smaller ``study.gain_record``)."""

from __future__ import annotations

from typing import Any

from socbench.report.output import fmt

HEAD = ("domain", "question", "target", "n", "PPI [95% CI]", "classical CI", "gain [CI]", "coverage")
LEGEND = ("n: labelled respondents; gain: the respondents the classical interval would need to be as "
          "narrow, as a multiple of n;\ncoverage: share of the repeated splits whose 95% interval held the "
          "full-sample value, PPI / classical.")


def question_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per question: its headline target (the mean on a scale, else the first option's share)
    over all respondents, with the check over repeated splits."""
    rows = []
    for domain in record["domains"]:
        for question in domain["questions"]:
            head = question["estimates"][0] if question["estimates"] else None
            rows.append({"domain": domain["domain"], "question_id": question["question_id"],
                         "target": question["target"], "labelled": question["labelled"],
                         "respondents": question["respondents"], "note": question.get("note"),
                         **({} if head is None else {key: head[key] for key in (
                             "estimate", "ci", "classical_ci", "gain", "gain_ci", "rho", "lambda",
                             "coverage", "classical_coverage", "repeats", "full_sample")})})
    return rows


def _pair(values: list[float] | None, digits: int = 3) -> str:
    return "n/a" if not values else f"[{fmt(values[0], digits)}, {fmt(values[1], digits)}]"


def table_cells(row: dict[str, Any]) -> list[str]:
    """A question row as the terminal table's cells."""
    if "estimate" not in row:
        return [row["domain"], row["question_id"], row["target"], str(row["labelled"]), row["note"] or "",
                "", "", ""]
    return [row["domain"], row["question_id"], row["target"], str(row["labelled"]),
            f"{fmt(row['estimate'])} {_pair(row['ci'])}", _pair(row["classical_ci"]),
            f"{fmt(row['gain'], 2)} {_pair(row['gain_ci'], 2)}",
            f"{fmt(row['coverage'], 2)} / {fmt(row['classical_coverage'], 2)}"]


def domain_lines(record: dict[str, Any]) -> list[str]:
    """Per domain: the sentence a researcher can quote, the check behind it, and the plan."""
    lines = []
    for d in record["domains"]:
        gain = d["gain"]
        if not gain["questions"]:
            lines.append(f"{d['domain']}: no question has enough labelled respondents for an estimate.")
            continue
        lines += [f"{d['domain']}: these answers are worth {fmt(gain['median'], 1)} x your sample "
                  f"(n = {d['labelled']} of {d['respondents']} respondents labelled).",
                  f"  median gain over {gain['questions']} questions {fmt(gain['median'], 2)} (quartiles "
                  f"{fmt(gain['q25'], 2)}-{fmt(gain['q75'], 2)}; 95% CI over repeated splits "
                  f"{_pair(gain['median_ci'], 2)})",
                  f"  coverage of the 95% intervals over repeated splits: PPI {fmt(d['coverage'], 3)}, "
                  f"classical {fmt(d['classical_coverage'], 3)} (nominal 0.95)"]
        if d.get("plan"):
            lines.append("  budget: " + plan_text(d["plan"]))
    return lines


def plan_text(plan: dict[str, float]) -> str:
    if not plan["model_answers"]:
        return (f"spend it all on {plan['humans']:.0f} respondents: the model's answers would not narrow "
                "the interval enough to pay for themselves")
    return (f"{plan['humans']:.0f} respondents + {plan['model_answers']:.0f} model answers (cost "
            f"{plan['cost']:.2f}) = {plan['effective_n']:.0f} effective respondents, "
            f"{fmt(plan['gain_over_humans_only'], 2)} x the {plan['humans_only_n']:.0f} it buys alone")
