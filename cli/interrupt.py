"""Ctrl-C: exit 130 within seconds with one line, everything finished kept, nothing left running.

Every answer is in the engine cache as it arrives, so nothing finished is lost. Prefect may swallow
a ``KeyboardInterrupt`` while a run finishes and torch/vLLM teardown takes seconds, so the first
SIGINT also starts a timer that ends the process after ``GRACE_S``; a second SIGINT exits at once.
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
    for handler in (h for lg in loggers for h in lg.handlers if isinstance(h, logging.StreamHandler)):
        handler.setLevel(logging.CRITICAL + 1)


def _first(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, lambda signum, frame: exit_interrupted())  # the second: at once
    _quiet_console()
    grace = threading.Timer(GRACE_S, exit_interrupted)
    grace.daemon = True
    grace.start()
    raise KeyboardInterrupt


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
