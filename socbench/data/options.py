"""Options each respondent was actually shown, and the items that can be scored.

An item is scoreable only when the true code is among the options offered to *that* respondent
(ISSP's country-specific ``special`` scales); otherwise it is excluded and counted by reason: no
answer, a missing code of that question, or a code the question does not offer. An option whose
label is a missing label is never offered, in the base set or a country's override (ISSP Family
V31 relabels code 6 "Not asked" for Spain): its answers are excluded as that missing code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from socbench.data.missing_labels import STATA_MISSING, is_missing_option
from socbench.types import Code, DomainData, Item, Question, Span

NO_ANSWER = "system-missing (no answer recorded)"
INVALID_CODE = "code not offered (missing or invalid code)"
OUT_OF_RANGE = "value outside the question's range (or not a number)"


def code_order(code: Code) -> tuple[int, float, str]:
    """Numeric codes in numeric order, then text codes."""
    try:
        return (0, float(code), code)
    except ValueError:
        return (1, 0.0, code)


def effective_options(question: Question, country_code: str | None,
                      ) -> tuple[tuple[tuple[Code, str], ...], bool, dict[Code, str]]:
    """Base options overlaid with the country's override (exact code first, else the nation of a sub-sample:
    "DE-W" falls back to "DE"; country-only codes appended in numeric order; an unmapped country, None, is
    shown the base options), less those labelled as missing; whether there was an override; and the options
    withheld as missing (missing codes, for the exclusion reason)."""
    special = question.special
    override = (country_code and special.get(country_code, special.get(country_code.split("-")[0]))) or {}
    pairs = [(code, override.get(code, label)) for code, label in question.options.items()]
    pairs += [(code, override[code]) for code in sorted(override.keys() - question.options, key=code_order)]
    withheld = {code: label for code, label in pairs if is_missing_option(code, label)}
    return tuple(pair for pair in pairs if pair[0] not in withheld), bool(override), withheld


def exclusion(true_code: Code | None, options: tuple[tuple[Code, str], ...],
              missing: dict[Code, str], span: Span | None = None) -> str | None:
    """Why an answer is not scored (None: it is), in the words every count uses (run, ``data validate``,
    import report); a question's own missing code says its kind by name: ``missing code 8 (Can't
    choose)``, ``Stata missing .a (Don't know)``, ``missing code NA (R's NA in the CSV)``."""
    if true_code is None:
        return NO_ANSWER
    if true_code in missing and (span is not None or all(code != true_code for code, _ in options)):
        kind = "Stata missing" if STATA_MISSING.match(true_code) else "missing code"
        return f"{kind} {true_code} ({' '.join(missing[true_code].split())[:80]})"
    if span is not None:
        return None if in_span(true_code, span) else OUT_OF_RANGE
    return None if any(code == true_code for code, _ in options) else INVALID_CODE


def plain_number(value: float) -> int | float:
    """A number as a person writes it: 2.0 -> 2, 2.5 -> 2.5 (JSON, prompts, reports)."""
    return int(value) if float(value).is_integer() else value


def in_span(code: Code, span: Span) -> bool:
    """A code that is a number within a numeric question's range."""
    try:
        return span[0] <= float(code) <= span[1]
    except ValueError:
        return False


def build_items(data: DomainData) -> list[Item]:
    """One Item per (respondent, question): respondents in file order, questions in survey order."""
    items: list[Item] = []
    shown: dict[tuple[str, str | None], tuple] = {}  # per (question, country): computed once
    for person in data.respondents:
        for question in data.questions:
            key = (question.id, person.group_code)
            if key not in shown:
                options, specific, withheld = effective_options(question, person.group_code)
                # a number is asked for, no option offered
                shown[key] = (() if question.numeric else options, specific, {**withheld, **question.missing})
            options, specific, missing = shown[key]
            true_code = person.answers.get(question.id)
            items.append(Item(person.person_id, question.id, person.group_code, options, true_code, specific,
                              exclusion(true_code, options, missing, question.numeric), question.numeric))
    return items


def summarize_items(items: Iterable[Item]) -> dict[str, object]:
    """``{"total", "scoreable", "excluded", "excluded_by_reason": {reason: n}}``."""
    reasons = Counter(item.excluded_reason for item in items)
    excluded = {reason: n for reason, n in sorted(reasons.items(), key=lambda kv: str(kv[0])) if reason}
    total = sum(reasons.values())
    return {"total": total, "scoreable": reasons.get(None, 0), "excluded": total - reasons.get(None, 0),
            "excluded_by_reason": excluded}


def exclusions_by_question(items: Iterable[Item]) -> dict[str, dict[str, int]]:
    """``{question id: {reason: n}}`` for questions with any excluded item, in first-seen order,
    so a scale that loses its answers is visible by name and not only inside one total."""
    out: dict[str, Counter] = {}
    for item in items:
        if item.excluded_reason is not None:
            out.setdefault(item.question_id, Counter())[item.excluded_reason] += 1
    return {qid: dict(sorted(reasons.items())) for qid, reasons in out.items()}
