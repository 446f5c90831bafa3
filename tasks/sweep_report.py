"""The sweep's last stage: one summary per model and one leaderboard over every run, posted to the UI."""

from __future__ import annotations

import re

from prefect.artifacts import create_table_artifact

from socbench.records import SweepOutcome
from socbench.report.files import write_run_summary
from socbench.report.html import write_report
from socbench.report.leaderboard import leaderboard_rows
from socbench.sweep import SweepConfig, SweepState
from socbench.tasks import stage


def _artifact_key(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


@stage
def report_sweep(config: SweepConfig, state: SweepState, domain_ids: list[int]) -> SweepOutcome:
    """``summary.json``/``.md`` per model over its domains (failed ones named), then the report
    (leaderboard, plots, HTML) over every run under the output folder; the outcome by model."""
    summaries: dict[str, str] = {}
    completed: dict[str, list[int]] = {}
    failures: dict[str, dict[int, str]] = {}
    for index in range(len(config.models)):
        run = config.run_config(index)
        results = [state.results[(index, d)] for d in domain_ids if (index, d) in state.results]
        failed = {d: state.failed[(index, d)] for d in domain_ids if (index, d) in state.failed}
        summary = write_run_summary(run.output_dir, run.run_name, results, failed, run.data_record())
        create_table_artifact(summary.rows, key=f"issp-sweep-summary-{_artifact_key(run.run_name)}",
                              description=f"{run.data_record()['study']} sweep summary: {run.run_name}")
        summaries[run.run_name] = str(summary.path)
        completed[run.run_name] = [r.domain_id for r in results]
        if failed:
            failures[run.run_name] = failed
    output_dir = config.run.output_dir
    board = write_report(output_dir)
    create_table_artifact(leaderboard_rows(board.leaderboard, per_domain=False), key="issp-sweep-leaderboard",
                          description=f"Leaderboard of every run under {output_dir} ({board.html})")
    return SweepOutcome(summaries, completed, failures, str(board.html))
