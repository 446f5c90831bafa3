"""Result files (the seed's JSON plus summaries) and plots; see ``files`` and ``plots``."""

from socbench.report.files import (
    RunSummary,
    domain_markdown,
    model_dir,
    write_domain_files,
    write_run_summary,
    write_summary,
)
from socbench.report.plots import model_scale_plot

__all__ = [
    "RunSummary",
    "domain_markdown",
    "model_dir",
    "model_scale_plot",
    "write_domain_files",
    "write_run_summary",
    "write_summary",
]
