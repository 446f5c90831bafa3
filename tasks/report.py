"""Stage 7: result files for a domain (and the run summary), posted as UI artifacts."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from socbench import progress
from socbench.config import RunConfig
from socbench.domains import study_name
from socbench.records import DomainReport, RunReport
from socbench.report import (
    domain_markdown,
    leaderboard_rows,
    write_report,
    write_run_summary,
    write_scored_domain,
)
from socbench.report.circular import write_run_circular_table
from socbench.report.files import summary_row
from socbench.types import DomainResult, ScoredDomain


@task(name="report", cache_policy=NO_CACHE, persist_result=False)
def report(scored: ScoredDomain, config: RunConfig) -> DomainReport:
    """Write ``<Domain>_detailed.json`` / ``_metrics.json`` (and, with circular variants,
    ``_circular.jsonl`` / ``_circular_metrics.json``); post the domain's markdown report."""
    result = scored.result
    paths = write_scored_domain(config.output_dir, scored, config.expansion)
    create_markdown_artifact(domain_markdown(result), key=f"issp-report-domain-{result.domain_id}",
                             description=f"{study_name(config.dataset_dir)} {result.domain_name}: "
                                         f"{result.model}")
    line = progress.domain_line(summary_row(result))
    get_run_logger().info(line)
    progress.end(line)
    return DomainReport(result.domain_id, result.domain_name, result.metrics.get("accuracy"),
                        tuple(str(p) for p in paths))


@task(name="report_run", cache_policy=NO_CACHE, persist_result=False)
def report_run(config: RunConfig, results: list[DomainResult], failed: dict[int, str],
               export_failed: list[str] | None = None) -> RunReport:
    """``summary.json``/``.md`` over the domains run (and the ``--export`` formats that failed), and the
    report (leaderboard, plots, HTML) over every run under ``output_dir``; summary and leaderboard
    posted as table artifacts. Their paths, and the summary's rows (for the CLI's table)."""
    data = config.data_record()
    summary = write_run_summary(config.output_dir, config.run_name, results, failed, data,
                                export_failed or ())
    create_table_artifact(summary.rows, key="issp-summary",
                          description=f"{data['study']} summary: {config.run_name}")
    board = write_report(config.output_dir)
    create_table_artifact(leaderboard_rows(board.leaderboard, per_domain=False), key="issp-leaderboard",
                          description=f"Leaderboard of every run under {config.output_dir} ({board.html})")
    if config.circular is not None and results:
        markdown, _ = write_run_circular_table(config.output_dir, config.run_name, results, config.circular,
                                               config.mode)
        create_markdown_artifact(markdown.read_text(encoding="utf-8"), key="issp-circular-summary",
                                 description=f"{data['study']} circular evaluation: {config.run_name}")
    return RunReport(str(summary.path), str(board.html), summary.rows)
