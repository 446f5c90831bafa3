"""Result files (the original system's JSON plus summaries) and plots; see ``files``, ``plots``, ``circular``,
``leaderboard`` and ``html`` (the ``socbench report`` leaderboard and self-contained HTML)."""

from socbench.report.circular import (
    circular_table,
    read_variants,
    write_circular_files,
    write_circular_table,
    write_domain_circular,
    write_run_circular_table,
)
from socbench.report.files import (
    RunSummary,
    domain_markdown,
    write_domain_files,
    write_run_summary,
    write_scored_domain,
    write_summary,
)
from socbench.report.html import ReportPaths, write_report
from socbench.report.leaderboard import leaderboard, leaderboard_rows
from socbench.report.output import model_dir
from socbench.report.plots import model_scale_plot

__all__ = [
    "ReportPaths",
    "RunSummary",
    "circular_table",
    "read_variants",
    "write_circular_files",
    "write_circular_table",
    "write_domain_circular",
    "write_run_circular_table",
    "domain_markdown",
    "leaderboard",
    "leaderboard_rows",
    "model_dir",
    "model_scale_plot",
    "write_domain_files",
    "write_report",
    "write_run_summary",
    "write_scored_domain",
    "write_summary",
]
