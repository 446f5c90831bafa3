"""CPU seconds per test file, of the whole process tree: ``pytest -p tests.support.cputime``.

Why: on a shared, loaded machine wall time says little; CPU time (user + sys) of the test process
and every process it started does not grow with the load. Each test is charged the tree's CPU from
its setup to its teardown: the test process, its reaped children, and its live descendants (with
their own reaped children). A session fixture's start-up is charged to the first test that asks for
it, its teardown to the last test. A thread samples the tree once a second and counts, per file,
the expensive processes started (Prefect servers, vLLM servers, CLI runs, ...); in-process engines
are counted where socbench starts one (``VllmEngine._engine``, ``HfEngine._load``). At the end a
table per file and the 25 costliest tests are printed; with ``SOCBENCH_CPU_REPORT=path`` the table is
also written there as TSV.
"""

from __future__ import annotations

import functools
import os
import resource
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator

import psutil
import pytest

PREFECT_STARTS = {"server": "prefect-server", "worker": "prefect-worker"}  # `prefect <word> start`
KINDS = (  # (label, every word in the command line), first match wins
    ("vllm-server", ("vllm.entrypoints.openai.api_server",)),
    ("engine-core", ("EngineCore",)),
    ("cli", ("socbench.cli",)),
    ("chromedriver", ("chromedriver",)),
    ("postgres", ("postgres", "-D")),
    ("Rscript", ("Rscript",)),
)


def _own_and_reaped() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def tree_cpu() -> float:
    """CPU seconds of this process, its reaped children and its live descendants so far."""
    total = _own_and_reaped()
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _kind(process: psutil.Process) -> str | None:
    try:
        args = process.cmdline() or [process.name()]
    except psutil.Error:
        return None
    for i, word in enumerate(args[1:], 1):
        if word in PREFECT_STARTS and args[i + 1:i + 2] == ["start"] and "prefect" in args[i - 1]:
            return PREFECT_STARTS[word]
    line = " ".join(args)
    return next((label for label, words in KINDS if all(w in line for w in words)), "other")


class _Tally:
    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.per_test: dict[str, float] = {}
        self.tests: dict[str, int] = defaultdict(int)
        self.started: dict[str, Counter] = defaultdict(Counter)
        self.current = "(session start)"
        self.seen: set[tuple[int, float]] = set()
        self.stop = threading.Event()
        self.start = tree_cpu()

    def sample(self) -> None:
        while not self.stop.wait(1.0):
            self.scan()

    def scan(self) -> None:
        try:
            children = psutil.Process().children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                key = (child.pid, child.create_time())
            except psutil.Error:
                continue
            if key not in self.seen:
                self.seen.add(key)
                if kind := _kind(child):
                    self.started[self.current][kind] += 1

    def count_engine_starts(self) -> None:
        """Count in-process engine starts: the calls that find no model loaded yet."""
        from socbench.engines.hf import HfEngine
        from socbench.engines.vllm import VllmEngine

        for cls, method, loaded, label in ((VllmEngine, "_engine", "_llm", "vllm-in-process"),
                                           (HfEngine, "_load", "_model", "hf-in-process")):
            start = getattr(cls, method)

            def counted(engine, *args, _start=start, _loaded=loaded, _label=label, **kwargs):
                if getattr(engine, _loaded, None) is None:
                    self.started[self.current][_label] += 1
                return _start(engine, *args, **kwargs)

            setattr(cls, method, functools.wraps(start)(counted))


_TALLY = _Tally()


def pytest_sessionstart(session: pytest.Session) -> None:
    _TALLY.count_engine_starts()
    threading.Thread(target=_TALLY.sample, name="cputime-sampler", daemon=True).start()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    name = item.nodeid.split("::")[0]
    _TALLY.scan()
    _TALLY.current = name
    before = tree_cpu()
    try:
        return (yield)
    finally:
        _TALLY.scan()
        spent = tree_cpu() - before
        _TALLY.cpu[name] += spent
        _TALLY.per_test[item.nodeid] = spent
        _TALLY.tests[name] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    _TALLY.stop.set()
    total = tree_cpu() - _TALLY.start
    rows = sorted(_TALLY.cpu.items(), key=lambda kv: -kv[1])
    terminalreporter.section("CPU seconds per test file (user+sys, whole process tree)")
    for name, cpu in rows:
        if cpu >= 1:
            terminalreporter.write_line(f"{cpu:9.1f}  {_TALLY.tests[name]:4d} tests  {name}  {_began(name)}")
    terminalreporter.write_line(f"{total:9.1f}  {sum(_TALLY.tests.values()):4d} tests  total")
    terminalreporter.section("CPU seconds, the 25 costliest tests (setup and teardown included)")
    for nodeid, cpu in sorted(_TALLY.per_test.items(), key=lambda kv: -kv[1])[:25]:
        terminalreporter.write_line(f"{cpu:9.1f}  {nodeid}")
    if path := os.environ.get("SOCBENCH_CPU_REPORT"):
        _write(path, total)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist the summary is the controller's: each worker writes its own table beside it."""
    worker, path = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("SOCBENCH_CPU_REPORT")
    if worker and path:
        _write(f"{path}.{worker}", tree_cpu() - _TALLY.start)


def _began(name: str) -> str:
    return " ".join(f"{k}={n}" for k, n in sorted(_TALLY.started.get(name, {}).items()))


def _write(path: str, total: float) -> None:
    with open(path, "w") as out:
        out.write("file\ttests\tcpu_s\tstarted\n")
        for name, cpu in sorted(_TALLY.cpu.items(), key=lambda kv: -kv[1]):
            out.write(f"{name}\t{_TALLY.tests[name]}\t{cpu:.1f}\t{_began(name)}\n")
        out.write(f"TOTAL\t{sum(_TALLY.tests.values())}\t{total:.1f}\t\n")
