"""Work that runs beside the caller in a process of its own, when it is big enough to pay for one.

Why: the score stage's largest part, the demographic model's cross-fitted fits, depends on the data alone,
and the rest of the stage does not need it until the end; a second process (not a thread: the fits hold the
GIL) does it on the second core meanwhile. Small work (the demo's, the tests') runs in the caller when its
result is asked for, as if called there. The process is a fresh interpreter that imports only socbench
(not ``multiprocessing``'s spawn, which re-runs the caller's script: a notebook's or a script's without a
``__main__`` guard) and ignores Ctrl-C (the caller decides; ``cancel`` stops it). The work, its arguments
and its result (or exception) travel as pickles in a temporary folder.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_SERVE = "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); " \
         "from socbench.background import serve; serve(sys.argv[1])"


def serve(folder: str) -> None:
    """The process's side: ``work.pkl`` in, ``result.pkl`` out, as (done, value or exception)."""
    given = Path(folder, "work.pkl")
    with given.open("rb") as fh:  # streamed, in and out: a whole survey's items are a gigabyte of pickle
        work, args, kwargs = pickle.load(fh)
    given.unlink()  # the respondents' data it holds is not left behind if the caller dies
    try:
        outcome = (True, work(*args, **kwargs))
    except Exception as exc:  # raised in the caller
        outcome = (False, exc)
    with Path(folder, "result.pkl").open("wb") as fh:
        pickle.dump(outcome, fh, pickle.HIGHEST_PROTOCOL)


def cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or taskset's share)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Beside(Generic[T]):
    """``work(*args, **kwargs)``, begun now in a process of its own when ``apart`` (and there is a second
    core), else in the caller at ``result()``; ``cancel()`` stops a process whose result is not wanted."""

    def __init__(self, apart: bool, work: Callable[..., T], *args: Any, **kwargs: Any) -> None:
        self._call = (work, args, kwargs)
        self._process: subprocess.Popen[bytes] | None = None
        if not apart or cores() < 2:
            return
        self._folder = tempfile.mkdtemp(prefix="socbench-beside-")
        root = str(Path(__file__).resolve().parents[1])  # socbench importable as here, installed or not
        path = os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))
        try:
            with Path(self._folder, "work.pkl").open("wb") as fh:
                pickle.dump(self._call, fh, pickle.HIGHEST_PROTOCOL)
            self._process = subprocess.Popen([sys.executable, "-c", _SERVE, self._folder],
                                             env={**os.environ, "PYTHONPATH": path}, stdin=subprocess.DEVNULL)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):  # then in the caller, as if small
            shutil.rmtree(self._folder, ignore_errors=True)

    def result(self) -> T:
        work, args, kwargs = self._call
        if self._process is None:
            return work(*args, **kwargs)
        try:
            self._process.wait()
            with Path(self._folder, "result.pkl").open("rb") as fh:
                done, value = pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError):  # it died (killed, out of memory): done here
            done, value = True, work(*args, **kwargs)
        finally:
            self.cancel()
        if not done:
            raise value
        return value

    def cancel(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            shutil.rmtree(self._folder, ignore_errors=True)
            self._process = None
