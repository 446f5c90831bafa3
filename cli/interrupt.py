"""Ctrl-C: exit 130 within seconds with one line, everything finished kept, nothing left running.

A terminal sends SIGINT to the whole foreground process group. socbench's own Prefect API is out
of that group (``cli.prefect_api``); socbench itself gets ``KeyboardInterrupt``, and on the way
out the engines are closed (``finally`` in the flows) and the API stopped. The console is quiet
meanwhile (Prefect's "Crash detected!" lines still reach its API and UI). Every answer is in the
engine cache the moment it arrives, so nothing finished is lost.

Two things make the exit certain: Prefect swallows a ``KeyboardInterrupt`` that arrives while a
run is finishing (its engine treats it as raised "after user code finished"), and tearing down
torch and vLLM at interpreter exit takes seconds. So the first SIGINT also starts a grace timer
that ends the process after ``GRACE_S`` whatever it is doing, and the line is followed by an
immediate exit. A second SIGINT exits at once. The API server then stops by itself (it gets
SIGTERM when socbench's process ends: ``socbench.processes.start_group(orphan_safe=True)``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn

INTERRUPTED = "socbench: interrupted; finished requests are in the cache, rerun to resume"
GRACE_S = 8.0
_EXITING = threading.Lock()


def exit_interrupted() -> NoReturn:
    """Print the line (once, whichever thread comes first) and end the process: exit code 130."""
    _EXITING.acquire()  # a second caller waits here until the process is gone
    print(INTERRUPTED, file=sys.stderr, flush=True)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(130)


def _quiet_console() -> None:
    """No more log lines on the terminal (the API and the UI still get them)."""
    loggers = [logging.getLogger(), *(lg for lg in logging.root.manager.loggerDict.values()
                                     if isinstance(lg, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setLevel(logging.CRITICAL + 1)


def _first(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, _second)
    _quiet_console()
    threading.Thread(target=_grace, name="socbench-interrupt", daemon=True).start()
    raise KeyboardInterrupt


def _grace() -> None:
    threading.Event().wait(GRACE_S)
    exit_interrupted()


def _second(signum: int, frame: object) -> None:
    exit_interrupted()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C handling as above while inside (the main thread only; elsewhere signals are left alone)."""
    try:
        previous = signal.signal(signal.SIGINT, _first)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
