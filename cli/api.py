"""``socbench.evaluate``: the Python front door beside the command line. It runs exactly what ``socbench
issp`` / ``socbench mcq`` run and returns what the run wrote to its results log, typed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socbench.config import from_flat
from socbench.outcomes import Outcome

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class EvalResult:
    """A finished run: whether it completed, its folder, and what its results log holds."""

    task: str
    folder: Path
    outcome: Outcome

    @property
    def complete(self) -> bool:
        return self.outcome.ok

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """Each unit's headline metrics, by unit name (an ISSP domain, an MCQ dataset)."""
        from socbench.log.read import unit_metrics

        return unit_metrics(self.folder)

    def to_pandas(self) -> pd.DataFrame:
        """Every scored item of the run, one row each, with the unit it belongs to."""
        from socbench.log.read import items_frame

        return items_frame(self.folder)


def evaluate(task: str = "issp", *, progress: bool = False, **settings: Any) -> EvalResult:
    """Run ``task`` ("issp" or "mcq") with ``settings`` named as the CLI's flags, e.g.
    ``evaluate("issp", model="smollm2-135m-instruct", domain_id=3, interview_count=20)``.

    A bad setting raises ``ConfigError`` before any work; a run that did not complete is returned with
    ``complete`` False (its ``outcome`` says which units and why), never as a score. With ``dry_run=True``
    nothing is sent: ``outcome.printed`` is the table of requests, tokens and cost (``socbench.cost``)."""
    from socbench.cli.inprocess import run
    from socbench.studies import study, task_for

    config = from_flat(study(task).config_type(), settings)
    outcome = run(config, show_progress=progress)  # a notebook shows the result, not bars
    return EvalResult(task, task_for(config).folder(), outcome)
