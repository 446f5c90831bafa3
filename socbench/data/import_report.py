"""What ``data import`` decided, for the user to review: on stderr and in ``import_report_<slug>.md``.

Why: every decision that changes what is measured is written down per question. Labels too long
for a prompt stop the import; country codes without a label are a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from socbench.data.question_scale import QuestionDecision, code_order
from socbench.data.survey_file import SurveyFile
from socbench.errors import DataError

MAX_LABEL = 1_000  # characters: the longest real ISSP label is under 300


def check_label_sizes(survey: SurveyFile, names: Sequence[str]) -> None:
    """A variable or value label over ``MAX_LABEL`` would go into every prompt: one line naming it."""
    for name in names:
        variable = survey.variables[name]
        texts = [("variable label", variable.label or "")]
        texts += [(f"value label of code {code}", label) for code, label in variable.value_labels.items()]
        for what, text in texts:
            if len(text) > MAX_LABEL:
                raise DataError(
                    f"{survey.path}: variable {name}: {what} is {len(text):,} characters "
                    f"(at most {MAX_LABEL:,} go into a prompt); shorten it in the file or codebook"
                )


def country_warnings(survey: SurveyFile, country: str | None, counts: Mapping[str, int]) -> list[str]:
    """Country codes the file does not label: the persona would show the bare number."""
    if country is None or survey.variables[country].is_string:
        return []
    labels = survey.variables[country].value_labels
    bare = {code: n for code, n in counts.items() if code not in labels}
    if not bare:
        return []
    ordered = sorted(bare.items(), key=lambda kv: code_order(kv[0]))
    shown = ", ".join(f"{code} ({n} respondents)" for code, n in ordered)
    return [
        f"country variable {country}: code(s) without a label: {shown}; these respondents' persona "
        f'says "Country": "<code>" and their country is unmapped (label the codes in the file)'
    ]


def _quoted(code: str, label: str) -> str:
    return code if label == code else f'{code} "{label}"'


def question_lines(decision: QuestionDecision) -> list[str]:
    """The report's lines for one question."""
    options = ", ".join(_quoted(code, label) for code, label in decision.options.items())
    lines = [f"- {decision.question_id}: {len(decision.options)} options: {options}"]
    if decision.filled:
        lines.append(
            f"  - filled in by the scale rule (unlabelled points of a labelled range that the data "
            f"holds): {', '.join(decision.filled)}"
        )
    if decision.missing:
        shown = "; ".join(
            f"{_quoted(code, label)} ({source})" for code, (label, source) in decision.missing.items()
        )
        lines.append(f"  - missing codes: {shown}")
    excluded = decision.excluded()
    total = sum(decision.counts.values())
    text = "; ".join(f"{reason}: {n}" for reason, n in excluded.items()) or "none"
    lines.append(f"  - answers in the file: {total}, substantive {decision.answered}; not scored: {text}")
    unoffered = decision.unoffered()
    if unoffered:
        lines.append(
            "  - codes in the data neither offered nor missing (kept as recorded, excluded at scoring): "
            + ", ".join(f"{code} ({n})" for code, n in unoffered.items())
        )
    return lines


def format_report(
    source: str, slug: str, decisions: Sequence[QuestionDecision], warnings: Sequence[str],
    roles: Sequence[str] = (),
) -> str:
    """The whole report as Markdown (the same text goes to stderr); ``roles``: its section on roles
    and the persona (``data.roles.role_lines``)."""
    lines = [f"# Import report: {slug} (from {source})", ""]
    if warnings:
        lines += ["## Warnings", "", *(f"- {warning}" for warning in warnings), ""]
    lines += roles
    filled = sum(bool(d.filled) for d in decisions)
    lines += [
        f"## Questions ({len(decisions)}; {filled} filled in by the scale rule)",
        "",
        "Options are the labelled codes that are not missing; a numeric question whose data holds "
        "unlabelled codes inside its labelled range offers every code of that range. Missing codes "
        "are per question: declared user-missing in the file, else a missing label, else --missing.",
        "",
    ]
    for decision in decisions:
        lines += question_lines(decision)
    return "\n".join(lines) + "\n"
