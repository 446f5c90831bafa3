"""Stage 7: a unit's record of the results log (at the end: the run's summary and report), as UI artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from socbench import progress
from socbench.log.write import write_unit_record
from socbench.outcomes import Artifact, RunReport, UnitReport
from socbench.task import Task
from socbench.tasks import stage


def post(artifacts: Sequence[Artifact]) -> None:
    for made in artifacts:
        if made.table is not None:
            create_table_artifact(made.table, key=made.key, description=made.description)
        else:
            create_markdown_artifact(made.markdown or "", key=made.key, description=made.description)


@stage
def report(study: Task, scored: Any, result: Any, seconds: float) -> UnitReport:
    """Write the unit's files and its record in the shape every study shares (``result``: the unit flow's);
    post its artifacts; log and show the line that says what came of it."""
    written = study.report(scored, seconds)
    write_unit_record(study.folder(), study.name, study.config.engine.model, study.record(result))
    post(written.artifacts)
    get_run_logger().info(written.line)
    progress.end(written.line)
    return written


@stage
def report_run(study: Task, results: list[Any], failed: dict[int, str],
               export_failed: list[str]) -> RunReport:
    """The run's summary (failed ``--export`` formats named) and the report over every run beside it."""
    written = study.finish(results, failed, export_failed)
    post(written.artifacts)
    return written
