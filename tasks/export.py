"""Stage 8 (when the config asks, ``--export``): the run's answers as csv/parquet/dta/sav files."""

from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import State

from socbench.config import RunConfig
from socbench.export import export_formats
from socbench.report.output import model_dir
from socbench.tasks import stage


@stage
def export(config: RunConfig) -> list[str]:
    """``socbench export`` of this run in each format of ``config.export`` (``--wide`` with ``export_wide``),
    listed in a markdown artifact; the formats that could not be written, one line why each."""
    done = export_formats(model_dir(config.output_dir, config.run_name), config.export, config.export_wide,
                          config.data_record())
    lines = [f"- `{path}`" for path in done.paths] + [f"- note: {note}" for note in done.notes]
    lines += [f"- failed: {line}" for line in done.failed]
    create_markdown_artifact("\n".join(["# Exported answers", "", *lines]), key="issp-export",
                             description=f"socbench export: {config.run_name}")
    logger = get_run_logger()  # a change: a warning (printed where a run is watched); the CLI prints failures
    for line in lines:
        (logger.warning if line.startswith("- note") else logger.info)(f"export {line[2:]}")
    return list(done.failed)


def export_failures(state: State | None) -> list[str]:
    """The failed formats of an ``export`` run (a crashed task: its message)."""
    if state is None:
        return []
    return list(state.result()) if state.is_completed() else [state.message or state.name or "crashed"]
