"""``variables_<slug>.json``: the source file's own metadata of an imported domain, for the way back.

Why: ``socbench export --wide`` writes the model's answers in the survey's own shape (names, labels,
value labels, missing-value declarations) to open beside the archive file; the question set keeps only
what the prompts need. Each answer record's ``source_row`` merges an export back onto the source rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from socbench.data.survey_file import SurveyFile
from socbench.errors import DataError, problem

VARIABLES_PREFIX = "variables_"


class SourceVariable(BaseModel):
    """One variable as the source file declares it (codes are the canonical strings)."""

    model_config = ConfigDict(frozen=True)

    name: str  # as the file spells it
    question_id: str | None = None  # the question set's id (None: not a question, e.g. the weight)
    label: str | None = None
    value_labels: dict[str, str] = {}
    missing_ranges: list[tuple[float, float]] = []  # SPSS user-missing (a discrete value: lo == hi)
    is_string: bool = False


class SourceVariables(BaseModel):
    """What ``variables_<slug>.json`` holds."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    source_file: str
    kind: str  # Stata | SPSS | CSV
    rows: int
    questions: list[SourceVariable]
    weight: SourceVariable | None = None
    country: SourceVariable | None = None
    group: SourceVariable | None = None  # the grouping variable that is not a country (province, year)


def variables_path(data_root: Path, slug: str) -> Path:
    return Path(data_root) / f"{VARIABLES_PREFIX}{slug}.json"


def source_variables(survey: SurveyFile, questions: Sequence[tuple[str, str]], weight: str | None,
                     country: str | None, group: str | None = None) -> SourceVariables:
    """The record of one import: each question's variable (with its question id), weight, country, group;
    each as the file declares it (``Variable``'s fields, less the missing codes the question set holds)."""
    def record(name: str | None, question_id: str | None = None) -> SourceVariable | None:
        return SourceVariable(**asdict(survey.variables[name]), question_id=question_id) if name else None

    return SourceVariables(source_file=survey.path.name, kind=survey.kind, rows=survey.n_rows,
                           questions=[record(name, qid) for name, qid in questions],
                           weight=record(weight), country=record(country), group=record(group))


def read_variables(data_root: Path, slug: str) -> SourceVariables:
    """The domain's record; a domain imported without one (or not imported) is one line."""
    path = variables_path(data_root, slug)
    if not path.is_file():
        raise DataError(f"{path}: not found: the domain '{slug}' has no import metadata (variable names "
                        "and labels); --wide needs a domain imported by `socbench data import` (run it "
                        "again with --replace if it was imported before this file existed)")
    try:
        return SourceVariables.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        reason = problem(exc) if isinstance(exc, ValidationError) else exc
        raise DataError(f"{path}: cannot read the import metadata ({reason})") from None
