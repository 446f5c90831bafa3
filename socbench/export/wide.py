"""The wide export: the survey's own shape (a row per respondent, a column per question under its variable
name, the source file's labels and missing declarations), the model's answers in one table and the real
ones (missing codes included) in a second, so users analyse them side by side; ``source_row`` merges
either back onto the archive file.
"""

from __future__ import annotations

import pandas as pd

from socbench.data.missing_labels import STATA_MISSING
from socbench.data.variables import SourceVariable, SourceVariables
from socbench.errors import DataError
from socbench.export.long import numeric_codes
from socbench.export.source import DomainSource
from socbench.export.writers import Labels, code_number
from socbench.log.read import DomainRun

ROW = "source_row"
PERSON = "person_id"


def wide_labels(variables: SourceVariables) -> Labels:
    """Each column's label, value labels (numeric codes and Stata's ``.a``-``.z``) and SPSS missing
    declarations, as imported."""
    kept = [v for v in (variables.weight, *variables.questions) if v is not None]
    return Labels(
        columns={ROW: f"Row in {variables.source_file} (1 = first respondent)",
                 PERSON: "socbench respondent id", **{v.name: v.label for v in kept if v.label}},
        values={v.name: {code_number(code): label for code, label in v.value_labels.items()}
                for v in kept if v.value_labels and not v.is_string and _numeric(v.value_labels)},
        missing={v.name: list(v.missing_ranges) for v in kept if v.missing_ranges})


def _numeric(labels: dict[str, str]) -> bool:
    """Numeric codes (Stata's ``.a``-``.z`` among them): what .sav and .dta label."""
    codes = [code for code in labels if not STATA_MISSING.match(code)]
    return not pd.to_numeric(pd.Series(codes, dtype=object), errors="coerce").isna().any()


def _column(variable: SourceVariable, codes: list[str | None]) -> pd.Series:
    return pd.Series(codes, dtype=object) if variable.is_string else numeric_codes(codes)


def wide_tables(domain: DomainRun, source: DomainSource) -> tuple[pd.DataFrame, pd.DataFrame, Labels]:
    """(model's answers, real answers, their labels) for the respondents of the run, by source row; the
    model's answer is blank where it was unreadable, missing or not asked (a missing real answer)."""
    variables = source.variables
    if variables is None:  # domain_source reads them for --wide
        raise DataError(f"{domain.path}: no import metadata for {domain.domain}")
    details = domain.stored.details
    people = list(source.respondents)  # everyone the run read, asked or not (every answer missing)
    unrowed = [p for p in people if source.respondents[p].source_row is None]
    if unrowed:
        raise DataError(f"{source.answer_file}: respondent {unrowed[0]} has no source_row (imported before "
                        "exports existed): run `socbench data import` again with --replace")
    people.sort(key=lambda p: source.respondents[p].source_row or 0)
    answers = {(str(d.person_id), d.question_id.lower()): d.llm_answer
               for d in details if d.parse_error is None and d.engine_error is None}
    records = [source.respondents[p] for p in people]
    head = {ROW: [r.source_row for r in records], PERSON: numeric_codes([str(r.person_id) for r in records])}
    if variables.weight is not None:
        head[variables.weight.name] = [r.weight for r in records]
    model, real = dict(head), dict(head)
    for variable in variables.questions:
        qid = str(variable.question_id)
        model[variable.name] = _column(variable, [answers.get((p, qid.lower())) for p in people])
        real[variable.name] = _column(variable, [_answer(r.questions_answer, qid) for r in records])
    return pd.DataFrame(model), pd.DataFrame(real), wide_labels(variables)


def _answer(answers: dict[str, str | None], qid: str) -> str | None:
    """The record's code for ``qid`` (ids match case-insensitively, as the loaders match them)."""
    if qid in answers:
        return answers[qid]
    return next((code for key, code in answers.items() if key.lower() == qid.lower()), None)
