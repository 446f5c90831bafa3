"""What ``socbench data import`` was asked (``ImportRequest``) and what it decided before reading a row
(``ImportPlan``): the importer makes the plan, the import report describes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from socbench.data import import_safety as safe
from socbench.data.import_records import RecordLayout
from socbench.data.question_labels import QuestionDecision
from socbench.data.roles import BACKGROUND
from socbench.data.sampling import SAMPLE_SEED
from socbench.data.survey_file import SurveyFile
from socbench.manifest import DomainSpec, Manifest

DEFAULT_SIZES = (500, 1000, 2000)


class ImportRequest(BaseModel):
    """What the user asked for (the flags of ``socbench data import``)."""

    model_config = ConfigDict(frozen=True)

    source: Path
    out: Path
    qa: Path | None = None
    questions: tuple[str, ...] | None = None
    country: str | None = None
    weight: str | None = None
    slug: str | None = None
    name: str | None = None
    sizes: tuple[int | Literal["all"], ...] = DEFAULT_SIZES  # "all": everyone (A_GroundTruth_samplingall)
    seed: int = SAMPLE_SEED
    codebook: Path | None = None
    replace: bool = False  # an existing domain of the slug is replaced whole (else: an error)
    bad_weights: str = "error"  # error | drop | unweighted (import_safety.check_weights)
    missing: tuple[str, ...] = ()  # --missing: codes missing for every question not offering them
    scale_conflict: Literal["file", "refuse"] = "file"  # --qa options that disagree with the file's
    sep: str | None = None  # a .csv source's separator and decimal mark (None: detected)
    decimal: str | None = None
    roles: tuple[tuple[str, str], ...] = ()  # --roles ROLE=VAR ("none": the study has no such variable)
    study_country: str | None = None  # --study_country: the study's one country, where no variable holds it
    persona: str | tuple[str, ...] = BACKGROUND  # --persona: background | all | the variables named


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
    question_file: bytes  # the question set to write
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
