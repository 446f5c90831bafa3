"""``socbench ...`` in this process (``cli.main``): what a test whose promise is not about the process
itself (exit code of the real binary, a real stdout/stderr, Ctrl-C, nothing left running, a fresh venv)
runs, instead of a subprocess that spends 2-5 CPU s importing Python, Prefect, pandas and scikit-learn.
A flow run needs the session's Prefect API (the ``api_url`` fixture) to be active."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence


def exit_code(argv: Sequence[str]) -> int:
    """``socbench argv`` here: its exit code, argparse's own exits (--help, bad flags) included."""
    from socbench.cli import main

    try:
        return main(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)


@contextlib.contextmanager
def cli_environment(env: Mapping[str, str] | None = None) -> Iterator[None]:
    """The environment defaults the CLI sets (and ``env``) while inside, undone after; the engines a run
    left open (a preflight error: a process would exit) closed."""
    from socbench.cli.inprocess import QUIET
    from socbench.engines import session

    updates = {**{key: os.environ.get(key, value) for key, value in QUIET.items()}, **(env or {})}
    before = {key: os.environ.get(key) for key in updates}
    os.environ.update(updates)
    try:
        with _prefect_console():
            yield
    finally:
        session.close_engines()
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _prefect_console() -> Iterator[None]:
    """Prefect's console handlers on the current stderr and Prefect's loggers at WARNING while inside, as a
    fresh ``socbench`` process has them (``QUIET``). Why: this process set Prefect's logging up earlier,
    on the stderr of that moment (a test's capture, closed since): each flow-run line printed a
    "Logging error", and a run's own warnings (an export's notes) were lost."""
    if "prefect" not in sys.modules:  # the run sets Prefect's logging up under ``QUIET``, on this stderr
        yield
        return
    handlers = prefect_console_handlers()
    saved = [(handler, handler.stream, handler.console.file) for handler in handlers]
    prefect = logging.getLogger("prefect")
    level = prefect.level
    prefect.setLevel(max(level, logging.WARNING))
    for handler in handlers:  # not ``setStream``: it flushes the old stream, closed
        handler.stream = handler.console.file = sys.stderr
        _drop_unwritten(handler)
    try:
        yield
    finally:
        prefect.setLevel(level)
        for handler, stream, file in saved:
            handler.stream, handler.console.file = stream, file


def prefect_console_handlers() -> set[logging.Handler]:
    """Every ``PrefectConsoleHandler`` of this process's loggers (none before Prefect set its logging up)."""
    handlers_module = sys.modules.get("prefect.logging.handlers")
    if handlers_module is None:
        return set()
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    return {handler for logger in loggers for handler in logger.handlers
            if isinstance(handler, handlers_module.PrefectConsoleHandler)}


def prefect_console_on_open_stream() -> None:
    """Prefect's console handlers left on a closed stream (a finished test's capture) onto the current
    stderr, their unwritten text dropped. Why: rich keeps a line it failed to write and prints it with the
    next one, so a flow's error logged on a closed stream came out in a later test's run (a Traceback in
    ``test_hostile_files``'s stderr, from ``test_data_use``'s refused flow, when they ran in one process)."""
    for handler in prefect_console_handlers():
        if getattr(handler.stream, "closed", False) or getattr(handler.console.file, "closed", False):
            handler.stream = handler.console.file = sys.stderr
            _drop_unwritten(handler)


def _drop_unwritten(handler: logging.Handler) -> None:
    with contextlib.suppress(AttributeError):  # rich's per-thread buffer of what it could not write
        del handler.console._buffer[:]


def socbench(*argv: str, env: Mapping[str, str] | None = None,
             code: int | None = 0) -> subprocess.CompletedProcess:
    """``socbench argv`` in this process with ``env`` added, its output captured as a subprocess's is
    (socbench's warnings too: a process prints them through logging's last resort, pytest catches them
    here); asserts exit ``code`` (``None``: any) and no traceback."""
    out, err = io.StringIO(), io.StringIO()
    # socbench's warnings bare, once: a process says them before Prefect sets its logging up (last resort)
    warnings, logger = logging.StreamHandler(err), logging.getLogger("socbench")
    warnings.setLevel(logging.WARNING)
    logger.addHandler(warnings)
    logger.propagate = False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                cli_environment({"OPENAI_API_KEY": "sk-test", **(env or {})}):
            returncode = exit_code(argv)
    finally:
        logger.removeHandler(warnings)
        logger.propagate = True
    done = subprocess.CompletedProcess(["socbench", *argv], returncode, out.getvalue(), err.getvalue())
    assert code is None or returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done
