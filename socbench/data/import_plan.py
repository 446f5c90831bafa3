"""What ``socbench data import`` decided before reading a row (``ImportPlan``), for what it was asked
(``ImportRequest``): the importer makes the plan, the import report describes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from socbench.data import import_safety as safe
from socbench.data.import_records import RecordLayout
from socbench.data.import_request import ImportRequest
from socbench.data.question_labels import QuestionDecision
from socbench.data.survey_file import SurveyFile
from socbench.manifest import DomainSpec, Manifest


@dataclass(frozen=True)
class ImportPlan:
    """Everything checked and decided before any row is read."""

    request: ImportRequest
    survey: SurveyFile
    layout: RecordLayout
    country: str | None  # the country variable's name in the file
    group: str | None  # a grouping variable that is not a country (region, wave), when the study has one
    entry: DomainSpec
    manifest: Manifest
    question_file: list[dict]  # the question set's records to write
    decisions: tuple[QuestionDecision, ...]  # per question: options, missing codes, data counts
    warnings: tuple[str, ...] = ()
    weights: safe.WeightCheck = safe.WeightCheck(None)
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
