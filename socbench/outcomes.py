"""The records of a whole run's outcome that cross tasks -> flows -> CLI (and a sweep's dispatched runs).
Frozen dataclasses: Prefect pickles a flow's result (and a Failed state's ``data``), and a worker, the CLI
and a Retry read the same fields by name, never a dict key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from socbench.types import DomainResult


@dataclass(frozen=True)
class Artifact:
    """Something for the Prefect UI: a markdown text or a table, under a key (lowercase, digits, dashes)."""

    key: str
    description: str
    markdown: str | None = None
    table: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class UnitReport:
    """What a unit's ``report`` wrote: the line that says what came of it, the UI's artifacts, the files."""

    line: str
    artifacts: tuple[Artifact, ...]
    files: tuple[str, ...]


@dataclass(frozen=True)
class RunReport:
    """What ``report_run`` wrote over a run: the text the CLI prints (the run's table), the files it
    names on stdout (summary, report, ...) and the UI's artifacts."""

    printed: str
    paths: dict[str, str]
    artifacts: tuple[Artifact, ...] = ()


@dataclass(frozen=True)
class Outcome(RunReport):
    """A run's outcome (``issp``, ``mcq``): its report and the units that did not complete, by id."""

    failed: dict[int, str] = field(default_factory=dict)  # no result: its data could not be read, ...
    incomplete: dict[int, str] = field(default_factory=dict)  # "domain N: K engine errors, first: ..."
    completed: list[int] = field(default_factory=list)
    export_failed: list[str] = field(default_factory=list)  # --export formats not written, one line why each

    @property
    def ok(self) -> bool:
        return not self.failed and not self.incomplete and not self.export_failed


@dataclass(frozen=True)
class SweepOutcome:
    """The ``issp-sweep`` flow's outcome, by model run name."""

    summaries: dict[str, str]
    completed: dict[str, list[int]]
    failed: dict[str, dict[int, str]]
    leaderboard: str


@dataclass(frozen=True)
class DispatchedDomain:
    """One domain's flow run inside a dispatched run."""

    domain_id: int
    completed: bool
    message: str
    result: DomainResult | None = None


@dataclass(frozen=True)
class BatchRecord:
    """One dispatched run as Prefect recorded it, and the domain runs inside it."""

    model: int
    domain_ids: tuple[int, ...]
    final: bool
    message: str  # its final state's name and message ("" while it runs)
    domains: tuple[DispatchedDomain, ...] = ()
    run_id: str = ""
