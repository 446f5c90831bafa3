"""Running a study's flow in this process for the CLI: quiet libraries, socbench's own Prefect API, and the
run's progress on stderr (stdout keeps socbench's own output only, so it can be piped)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from socbench.cli.flags import add_config_flags, config_from_args

# Defaults a user's environment may override; set before Prefect or vLLM is imported.
QUIET = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",  # offline: "Failed to send telemetry" (ERROR)
    "DO_NOT_TRACK": "1",  # Prefect's client-side usage data (and its notice on a terminal)
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "VLLM_LOGGING_LEVEL": "WARNING",
    "VLLM_LOGGING_STREAM": "ext://sys.stderr",  # vLLM logs to stdout by default
}


class ConsoleProgress:
    """``socbench.progress``'s listener for a console: a bar on a terminal while a unit's requests are
    answered, then one line per unit with its wall time (a log file, a pipe: just the lines)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.started, self.bar = "", time.monotonic(), None

    def begin(self, label: str) -> None:
        self._close_bar()
        self.label, self.started = label, time.monotonic()

    def requests(self, total: int) -> None:
        self._close_bar()
        if self.tty:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=self.label, unit="req", leave=False, file=self.stream)

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def end(self, line: str) -> None:
        from socbench.progress import finished_line

        self._close_bar()
        print(finished_line(line, time.monotonic() - self.started), file=self.stream, flush=True)

    def note(self, line: str) -> None:
        self._close_bar()
        print(f"socbench: warning: {line}", file=self.stream, flush=True)

    def status(self, line: str) -> None:
        """A batch's state and counts (``--batch``): beside the bar on a terminal, else a line each change."""
        if self.bar is not None:
            self.bar.set_postfix_str(line)
        else:
            print(f"{self.label}: {line}", file=self.stream, flush=True)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run(config: Any, show_progress: bool = True) -> Any:
    """The preflight, then the study's flow in this process on the API ``PREFECT_API_URL`` names, or on
    socbench's own (spawned first, the flow's imports meanwhile; its start said on stderr); the flow's
    ``Outcome``. Every request is the flow's ``vllm_generate``'s."""
    for key, value in QUIET.items():  # before anything imports vLLM or Prefect
        os.environ.setdefault(key, value)
    if config.dry_run:  # what it would send and cost: no preflight of the engine, no Prefect
        from socbench.cost import dry_run

        return dry_run(config)
    from socbench.log.rerun import marker, recall

    if (last := recall(config)) is not None:  # before the preflight, Prefect and the model
        print(f"socbench: the results were read from the last run of this command (the same settings, data "
              f"and socbench; nothing sent or recomputed); to run it again, delete {marker(config)}",
              file=sys.stderr)
        return last
    from socbench.background import few_collections
    from socbench.preflight import check_run
    from socbench.studies import study_of

    with few_collections():
        check_run(config)  # bad paths and settings fail here, before Prefect or a model starts
    from socbench.cli.prefect_api import prefect_api, spawn_early

    server = spawn_early(Path(config.output_dir) / ".cache" / "prefect-api.log")
    from socbench.progress import listening

    study = study_of(config)

    def meanwhile() -> None:  # imports only: the requests are the flow's
        from socbench.report.output import new_figure

        study.flow_function()
        import fastapi.encoders  # noqa: F401  Prefect's flow-run creation imports it (0.2 s)

        new_figure(1, 1)  # matplotlib's imports (0.3 s)

    shown = listening(ConsoleProgress()) if show_progress else contextlib.nullcontext()
    with few_collections(), shown, prefect_api(meanwhile, server):
        from socbench.flows import run_inprocess

        return run_inprocess(study.flow_function(), config)


def run_study(config: Any) -> int:
    """``run``, then its table and files on stdout, what did not complete on stderr; exit 1 unless every
    unit completed."""
    outcome = run(config)
    if outcome.printed:
        print(outcome.printed)
    if outcome.paths:
        print("\n".join(f"{name}: {path}" for name, path in outcome.paths.items()), flush=True)
    for reason in outcome.failed.values():
        print(f"socbench: error: {reason}", file=sys.stderr)
    for reason in outcome.incomplete.values():
        print(f"socbench: error: {reason} (incomplete: rerun the same command to send only the missing "
              "requests)", file=sys.stderr)
    for line in outcome.export_failed:
        print(f"socbench: error: export failed: {line}", file=sys.stderr)
    return 0 if outcome.ok else 1


def register(sub: argparse._SubParsersAction) -> None:
    """A sub-command per registered study (``socbench.studies.STUDIES``: ``issp``, any imported survey
    included, and ``mcq``), one flag per setting of its configuration; exit 1 when a unit failed or is
    incomplete. ``issp prompts`` (``cli.issp_prompts``) follows ``issp``."""
    from socbench.cli.issp_prompts import register_prompts
    from socbench.studies import STUDIES

    for study in STUDIES.values():
        parser = sub.add_parser(study.name, help=study.help, description=study.description)
        model = study.config_type()
        add_config_flags(parser, model)
        parser.set_defaults(handler=lambda args, model=model: run_study(config_from_args(model, args)))
        if study.name == "issp":
            register_prompts(sub)
