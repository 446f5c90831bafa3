"""What ``data import`` decided before reading a row (``ImportPlan``, for what it was asked:
``ImportRequest``), and the report that describes it for the user to review: a summary on stderr, the
whole report in ``import_report_<slug>.md``. The importer makes the plan.

Why: every decision that changes what is measured is written down per question. Labels too long
for a prompt stop the import; country codes without a label are a warning.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from socbench.data.import_request import ImportRequest
from socbench.data.options import code_order, plain_number
from socbench.data.question_labels import QuestionDecision
from socbench.data.survey_file import SYSTEM_MISSING, SurveyFile
from socbench.errors import DataError
from socbench.manifest import DomainSpec, Manifest
from socbench.metrics.persona_groups import AGE_GROUP, group_of
from socbench.weights import describe, weight_problems

MAX_LABEL = 1_000  # characters: the longest real ISSP label is under 300


@dataclass(frozen=True)
class WeightCheck:
    """The weight variable to write (None: none), the rows left out, and what was done."""

    weight: str | None
    dropped: np.ndarray | None = None  # rows without a usable weight (--bad-weights drop)
    note: str | None = None  # the chosen handling, counted (import output and sampling stats)


def check_weights(survey: SurveyFile, weight: str | None, choice: str) -> WeightCheck:
    """Every weight usable (``socbench.weights``), else one DataError line naming the count and the
    first rows, unless the user chose to drop those respondents or to import without weights."""
    if weight is None:
        return WeightCheck(None)
    numbers = pd.to_numeric(survey.columns([weight])[weight], errors="coerce")
    counts, positions = weight_problems(numbers.tolist())
    if not positions:
        return WeightCheck(weight)
    what = f"{len(positions)} of {survey.n_rows} respondents have no usable weight ({describe(counts)})"
    if choice == "error":
        rows = ", ".join(str(i + 1) for i in positions[:5])
        raise DataError(f"{survey.path}: weight variable {weight}: {what}, first rows {rows} (counted from "
                        f"1): fix the file, or choose --bad-weights drop (leave them out) or --bad-weights "
                        f"unweighted (import no weights)")
    if choice == "unweighted":
        return WeightCheck(None, None, f"{weight} not written, weighted metrics off: {what} "
                                       f"(--bad-weights unweighted)")
    if len(positions) == survey.n_rows:
        raise DataError(f"{survey.path}: weight variable {weight}: no respondent has a usable weight "
                        f"({describe(counts)}); --bad-weights drop would leave none")
    dropped = np.isin(np.arange(survey.n_rows), positions)
    return WeightCheck(weight, dropped, f"{what}: left out (--bad-weights drop)")


@dataclass(frozen=True)
class ImportPlan:
    """Everything checked and decided before any row is read."""

    request: ImportRequest
    survey: SurveyFile
    attributes: tuple[tuple[str, str], ...]  # the persona's (variable name, attribute key)
    questions: tuple[tuple[str, str], ...]  # (variable name, question id)
    country: str | None  # the country variable's name in the file
    group: str | None  # a grouping variable that is not a country (region, wave), when the study has one
    entry: DomainSpec
    manifest: Manifest
    question_file: list[dict]  # the question set's records to write
    decisions: tuple[QuestionDecision, ...]  # per question: options, missing codes, data counts
    warnings: tuple[str, ...] = ()
    weights: WeightCheck = WeightCheck(None)
    stale: tuple[Path, ...] = ()  # the old domain's files, removed once the new one is written
    country_counts: Mapping[str, int] = field(default_factory=dict)  # respondents per country (or group)
    roles: tuple[str, ...] = ()  # the report's lines on roles and the persona

    @property
    def strata(self) -> str | None:
        """The variable respondents are grouped (and samples stratified) by."""
        return self.group or self.country

    @property
    def respondents(self) -> int:
        """The respondents imported: the file's, less those left out for their weight (--bad-weights drop)."""
        dropped = self.weights.dropped
        return self.survey.n_rows - (int(dropped.sum()) if dropped is not None else 0)


def check_label_sizes(survey: SurveyFile, names: Sequence[str]) -> None:
    """A variable or value label over ``MAX_LABEL`` would go into every prompt: one line naming it."""
    for name in names:
        variable = survey.variables[name]
        texts = [("variable label", variable.label or "")]
        texts += [(f"value label of code {code}", label) for code, label in variable.value_labels.items()]
        for what, text in texts:
            if len(text) > MAX_LABEL:
                raise DataError(f"{survey.path}: variable {name}: {what} is {len(text):,} characters (at "
                                f"most {MAX_LABEL:,} go into a prompt); shorten it in the file or codebook")


def country_warnings(survey: SurveyFile, country: str | None, counts: Mapping[str, int]) -> list[str]:
    """Country codes the file does not label: the persona would show the bare number."""
    if country is None or survey.variables[country].is_string:
        return []
    labels = survey.variables[country].value_labels
    bare = sorted((code for code in counts if code not in labels and code != SYSTEM_MISSING), key=code_order)
    if not bare:
        return []
    shown = ", ".join(f"{code} ({counts[code]} respondents)" for code in bare)
    return [f"country variable {country}: code(s) without a label: {shown}; these respondents' persona says "
            f'"Country": "<code>" and their country is unmapped (label the codes in the file)']


def _quoted(code: str, label: str) -> str:
    return code if label == code else f'{code} "{label}"'


def _left_out(dropped: int) -> str:
    return f" ({dropped:,} more in the file left out: no usable weight, --bad-weights drop)" * bool(dropped)


def question_lines(decision: QuestionDecision) -> list[str]:
    """The report's lines for one question."""
    options = ", ".join(_quoted(code, label) for code, label in decision.options.items())
    span = decision.numeric and " to ".join(str(plain_number(end)) for end in decision.numeric)
    lines = [f"- {decision.question_id}: numeric, asked for a number from {span}" if span
             else f"- {decision.question_id}: {len(decision.options)} options: {options}"]
    if decision.conflicts:
        lines.append("  - the question set's options disagree with the file's value labels, so these are the "
                     "file's own: " + "; ".join(decision.conflicts))
    lines += [f"  - {note}" for note in decision.notes]
    if decision.filled:
        lines.append(f"  - filled in by the scale rule (unlabelled points of a labelled range that the data "
                     f"holds): {', '.join(decision.filled)}")
    if decision.missing:
        shown = "; ".join(f"{_quoted(code, label)} ({source})"
                          for code, (label, source) in decision.missing.items())
        lines.append(f"  - missing codes: {shown}")
    text = "; ".join(f"{reason}: {n}" for reason, n in decision.excluded().items()) or "none"
    lines.append(f"  - rows in the file: {sum(decision.counts.values())}, answers scored "
                 f"{decision.answered}; not scored: {text}")
    if unoffered := decision.unoffered():
        lines.append("  - codes in the data neither offered nor missing (kept as recorded, excluded at "
                     "scoring): " + ", ".join(f"{code} ({n})" for code, n in unoffered.items()))
    return lines


def summary_section(plan: ImportPlan) -> list[str]:
    """Respondents, countries, questions, the answers scored and not scored by reason; the warnings."""
    decisions, survey = plan.decisions, plan.survey
    # each missing code under its own label, as ``data validate`` counts
    reasons = sum((Counter(decision.excluded()) for decision in decisions), Counter())
    respondents = plan.respondents
    source = plan.request.qa.name if plan.request.qa else "from the file labels"
    blank = respondents * len(decisions) - sum(sum(d.counts.values()) for d in decisions)
    reasons["blank (no answer recorded)"] += blank
    countries = (f"{len(plan.country_counts)} groups by {plan.group} (not countries)" if plan.group else
                 f"{len(plan.country_counts)} countries ({plan.country})" if plan.country
                 else "one country (no country variable)")
    lines = ["## Summary", "",
             f"- {respondents:,} respondents{_left_out(survey.n_rows - respondents)}, {countries}, "
             f"{len(decisions)} questions ({source})",
             f"- {respondents * len(decisions):,} answers (respondents x questions): "
             f"{sum(d.answered for d in decisions):,} scored; not scored: "
             + ("; ".join(f"{r}: {n:,}" for r, n in sorted(reasons.items()) if n) or "none")]
    for what, picked in (("questions asked on the file's own options (the question set's disagree with the "
                          "file's value labels)", [d for d in decisions if d.conflicts]),
                         ("filled in by the scale rule", [d for d in decisions if d.filled]),
                         ("other questions with notes (options not offered, ...)",
                          [d for d in decisions if d.notes and not d.conflicts])):
        if picked:
            more = " ..." if len(picked) > 12 else ""
            lines.append(f"- {len(picked)} {what}: {', '.join(d.question_id for d in picked[:12])}{more}")
    lines.append("")
    if plan.warnings:
        lines += ["## Warnings", "", *(f"- {warning}" for warning in plan.warnings), ""]
    return lines


def questions_section(plan: ImportPlan) -> list[str]:
    filled = sum(bool(d.filled) for d in plan.decisions)
    lines = [f"## Questions ({len(plan.decisions)}; {filled} filled in by the scale rule)", "",
             "Options are the labelled codes that are not missing; a numeric question whose data holds "
             "unlabelled codes inside its labelled range offers every code of that range. Missing codes "
             "are per question: declared missing in the file (SPSS user-missing codes and ranges, Stata's "
             ".a-.z, R's NA in a numeric CSV column), else a missing label, else --missing. Blank cells are "
             "counted as system-missing. A question set's options are checked against the file's labels "
             "(see docs/own-survey.md).", ""]
    lines += [line for decision in plan.decisions for line in question_lines(decision)]
    return lines + sets_section(plan)


def sets_section(plan: ImportPlan) -> list[str]:
    """Each multi-select set (``--multi``): its question, asked once, and its variables with the code that
    means selected; none without sets."""
    sets: dict[str, list[dict]] = {}
    for record in plan.question_file:
        if record.get("multi"):
            sets.setdefault(record["multi"]["set"], []).append(record)
    return ["", f"## Multi-select sets ({len(sets)}: each asked once, 'select all that apply')", "",
            *(f"- {name}: {members[0]['multi']['question']!r}; " + "; ".join(
                f"{r['question_id']} = {r['multi']['label']!r} (selected: {r['multi']['selected']})"
                for r in members) for name, members in sets.items())] if sets else []


def age_band_lines(plan: ImportPlan) -> list[str]:
    """Where socbench bands a raw numeric age itself (a study in its own words keeps every label), the
    bands it made and from which values; nothing where the file's age is labelled (its bands are kept)."""
    name = next((n for n, k in plan.attributes if k == plan.entry.roles.age), None)
    if plan.entry.issp_vocabulary or name is None or plan.survey.variables[name].is_string:
        return []
    labels = plan.survey.variables[name].value_labels
    ages: dict[str, tuple[float, float, int]] = {}  # band -> (youngest, oldest, respondents)
    for code, n in plan.survey.code_counts([name])[name].items():
        band = None if code in labels else group_of(AGE_GROUP, code, issp=False)
        if band is not None and band != code:
            low, high, count = ages.get(band, (math.inf, -math.inf, 0))
            ages[band] = (min(low, float(code)), max(high, float(code)), count + n)
    shown = "; ".join(f"{band}: {n:,} respondents aged {low:g}-{high:g}"
                      for band, (low, high, n) in sorted(ages.items(), key=lambda kv: kv[1]))
    return ["## Age bands", "", f"- age: {name} holds unlabelled ages, so persona groups band them "
            f"(socbench's bands; labelled values stay as labelled): {shown}", ""] if ages else []


def format_report(plan: ImportPlan, summary: bool = False) -> str:
    """The report as Markdown: ``import_report_<slug>.md`` (every section), or (``summary``) what stderr
    shows: the summary and warnings."""
    lines = [f"# Import report: {plan.entry.slug} (from {plan.request.source.name})", ""]
    lines += summary_section(plan) + ([] if summary else [*plan.roles, *age_band_lines(plan),
                                                          *questions_section(plan)])
    return "\n".join(lines).rstrip("\n") + "\n"
