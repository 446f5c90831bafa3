"""A study is a Task: load its samples, turn them into engine requests, read and score the answers, write
its part of the results log. One pipeline runs every Task (``socbench.pipeline``; ``flows/`` stage by
stage). Why one shape: ISSP, an imported survey and a multiple-choice dataset differ only in these
methods; expansion, the engine and its cache, progress, retries and the summary are written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from socbench.outcomes import RunReport, UnitReport
from socbench.types import Answers, LoglikelihoodRequest, PromptRequest

Request = PromptRequest | LoglikelihoodRequest


@dataclass(frozen=True)
class Unit:
    """What one unit flow runs and one record of the results log holds: an ISSP domain, an MCQ dataset."""

    id: int
    name: str
    label: str  # how progress names it: "domain 3 Family", "arc-easy (smollm2-135m-instruct)"


@dataclass(frozen=True)
class Prompts:
    """A unit's engine requests, and what the task needs to read the answers back (MCQ's plan)."""

    requests: tuple[Request, ...]
    plan: Any = None


@dataclass(frozen=True)
class UnitResult:
    """A unit's outcome in the one shape every study's results log holds (``log.records.UnitRecord``): its
    metrics by name, why it is incomplete (None: every request answered) and the study's extras. Why one
    shape: the leaderboard, ``socbench report`` and ``socbench.evaluate`` read any study's units from it."""

    unit_id: int
    unit: str
    metrics: dict[str, float]
    incomplete_reason: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


class Task(Protocol):
    """One study under one run configuration; every method is one stage of the design card."""

    name: ClassVar[str]  # its name in ``studies.STUDIES``: the results log's ``task``
    config: Any

    def units(self) -> Sequence[Unit]:
        """The units to run, in order (``--domain_id`` / ``--start_domain_id``)."""

    def unit(self, unit_id: int) -> Unit:
        """One unit by id (a unit flow's parameter)."""

    def folder(self) -> Path:
        """The run's folder: where its results log is written."""

    def check(self) -> list[str]:
        """The task's own checks before any work (the preflight reads every unit's data too); the notes a
        user must see (one line each)."""

    def load(self, unit: Unit) -> Any:
        """``load_data``: the unit's samples, validated."""

    def notes(self, data: Any) -> list[str]:
        """What the watcher of a run must see about a unit's samples (respondents pooled into one unknown
        group), one line each."""

    def special_options(self, data: Any) -> Any:
        """``country_special_options``: the options each sample shows (identity where there are none)."""

    def prompts(self, samples: Any) -> Prompts:
        """``build_prompts``: every request, expansions (circular orders, draws) included."""

    def extract(self, prompts: Prompts, answers: Answers) -> Any:
        """``extract``: what each answer says (``answers.results`` in ``prompts.requests`` order)."""

    def score(self, samples: Any, plan: Any, extracted: Any) -> Any:
        """``score``: the unit's items and metrics (``plan``: the unit's ``Prompts.plan``; its requests and
        answers are gone by then: a whole survey's millions are not held through this stage)."""

    def result(self, unit: Unit, scored: Any, incomplete: str | None) -> Any:
        """The unit flow's result, what ``finish`` reads: it has ``unit_id`` and ``incomplete_reason``
        (``incomplete``: the requests the engine left unanswered, ``pipeline.engine_errors``)."""

    def record(self, result: Any) -> UnitResult:
        """``result`` in the shape every study's results log shares (written beside the study's own)."""

    def report(self, scored: Any, seconds: float) -> UnitReport:
        """``report``: write the unit's record of the results log (``seconds``: the unit's wall time)."""

    def finish(self, results: Sequence[Any], failed: dict[int, str],
               export_failed: Sequence[str]) -> RunReport:
        """``report_run``: the run's summary over the units' results (``failed``: units without one; the
        ``--export`` formats that could not be written) and the report over every run beside it."""
