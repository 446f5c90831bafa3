"""Work that runs beside the caller in a process of its own, when it is big enough to pay for one.

Why: the score stage's largest part, the demographic model's cross-fitted fits, depends on the data alone,
and the rest of the stage does not need it until the end; a second process (not a thread: the fits hold the
GIL) does it on the second core meanwhile. Small work (the demo's, the tests') runs in the caller when its
result is asked for, as if called there. The process is a fresh interpreter that imports only socbench
(not ``multiprocessing``'s spawn, which re-runs the caller's script: a notebook's or a script's without a
``__main__`` guard) and ignores Ctrl-C (the caller decides; ``cancel`` stops it). The work, its arguments
and its result (or exception) travel as pickles in a temporary folder. Here too: how a run's processes run
the cyclic garbage collector (``few_collections``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

T = TypeVar("T")
_SERVE = "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); " \
         "from socbench.background import serve; serve(sys.argv[1])"


FEW_COLLECTIONS = (50_000, 20, 20)  # the cyclic collector's thresholds during a run (CPython's: 700, 10, 10)


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """The cyclic garbage collector run rarely while a run builds and holds its millions of long-lived objects
    (prompts, answers, items: acyclic, freed by reference counting): at CPython's default thresholds it
    traversed them all again and again, 1.8 s of a 22 s run at 1,000 respondents (0.2 s after). Young
    cycles are still collected every 50,000 allocations; the thresholds are restored after (a notebook's,
    a worker's)."""
    before = gc.get_threshold()
    gc.set_threshold(*FEW_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


CHUNK = 10_000  # a long list argument travels this many elements a pickle


class _Long:
    """Where a long list argument was: its elements follow the call's pickle, ``CHUNK`` a pickle, each with
    a memo of its own (one pickle's memo holds every object it wrote: ~0.45 GB for a whole survey's items)."""

    def __init__(self, length: int) -> None:
        self.length = length


def _write(fh: BinaryIO, work: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    long = [isinstance(arg, list) and len(arg) > CHUNK for arg in args]
    pickle.dump((work, [_Long(len(arg)) if is_long else arg for arg, is_long in zip(args, long, strict=True)],
                 kwargs), fh, pickle.HIGHEST_PROTOCOL)
    for arg, is_long in zip(args, long, strict=True):
        for start in range(0, len(arg) if is_long else 0, CHUNK):
            pickle.dump(arg[start:start + CHUNK], fh, pickle.HIGHEST_PROTOCOL)


def _read(fh: BinaryIO) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
    work, args, kwargs = pickle.load(fh)
    for n, arg in enumerate(args):
        if isinstance(arg, _Long):
            args[n] = []
            while len(args[n]) < arg.length:
                args[n] += pickle.load(fh)
    return work, args, kwargs


def serve(folder: str) -> None:
    """The process's side: ``work.pkl`` in, ``result.pkl`` out, as (done, value or exception); the
    collector as in the caller's run (``few_collections``: 0.4 s of 3.6 at 1,000 respondents)."""
    given = Path(folder, "work.pkl")
    with few_collections():
        with given.open("rb") as fh:  # streamed, in and out: a whole survey's items are a gigabyte of pickle
            work, args, kwargs = _read(fh)
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
                _write(fh, *self._call)
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
