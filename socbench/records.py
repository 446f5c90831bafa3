"""What each stage hands on to the next as a whole run's outcome: the records that cross
tasks → flows → CLI (and a sweep's records of its dispatched runs), beside ``types.py``.

Frozen dataclasses: Prefect persists a flow's result (and a Failed state's ``data``) by pickling,
and a worker, the CLI and a Retry read the same fields by name, never a dict key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from socbench.types import DomainResult


@dataclass(frozen=True)
class DomainReport:
    """ISSP ``report``: one domain's written files."""

    domain_id: int
    domain: str
    accuracy: float | None
    files: tuple[str, ...]


@dataclass(frozen=True)
class RunReport:
    """ISSP ``report_run``: the summary and report paths and the summary's rows (the CLI's table)."""

    summary: str
    report: str
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class IsspOutcome(RunReport):
    """The ``issp`` flow's outcome: the run's report and what did not complete (by domain id)."""

    failed: dict[int, str] = field(default_factory=dict)  # no result: its data could not be read, ...
    incomplete: dict[int, str] = field(default_factory=dict)  # "domain N: K engine errors, first: ..."
    completed: list[int] = field(default_factory=list)
    export_failed: list[str] = field(default_factory=list)  # --export formats not written, one line why each

    @property
    def ok(self) -> bool:
        return not self.failed and not self.incomplete and not self.export_failed


@dataclass(frozen=True)
class McqOutcome:
    """The ``mcq`` flow's outcome: the files written; ``incomplete_reason`` when MCP requests
    got engine errors (MCP left out of the table)."""

    dataset: str
    incomplete_reason: str | None
    table: str
    results: str
    predictions: str
    csv: str
    plot: str
    circular_table: str | None = None
    circular_notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.incomplete_reason is None

    def paths(self) -> dict[str, str]:
        """The files to name on stdout, in the CLI's order."""
        named = {"results": self.results, "predictions": self.predictions, "csv": self.csv,
                 "plot": self.plot, "circular_table": self.circular_table}
        return {name: path for name, path in named.items() if path}


@dataclass(frozen=True)
class SweepOutcome:
    """The ``issp-sweep`` flow's outcome, by model run name."""

    summaries: dict[str, str]
    completed: dict[str, list[int]]
    failed: dict[str, dict[int, str]]
    leaderboard: str


# ------------------------------------------------------------------ a sweep's dispatched runs


@dataclass(frozen=True)
class DomainRecord:
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
    domains: tuple[DomainRecord, ...] = ()
    run_id: str = ""
