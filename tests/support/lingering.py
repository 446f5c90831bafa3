"""No test process outlives its tests: at the session's end no Prefect queue service may still hold
records (logs, events) for an API that has stopped.

Why: such records are sent at interpreter exit, each waiting on reconnects to a server that is gone;
a run of the sweep tests printed "74 passed" and then sat for 18 minutes ("Still processing items:
555 items remaining..."). Fixtures drain the workers while their API still answers
(``conftest.prefect_api``); should one not, this plugin drops what is left, so the process exits at
once, and fails the session naming how many records were stranded.
"""

from __future__ import annotations

import sys

import pytest


def stranded() -> dict[str, int]:
    """Service name -> records still queued, over Prefect's queue services (logs, events)."""
    services = sys.modules.get("prefect._internal.concurrency.services")
    found: dict[str, int] = {}
    for service in list(services._active_services) if services else []:  # none if Prefect never ran
        if queued := service._queue.qsize():
            found[type(service).__name__] = found.get(type(service).__name__, 0) + queued
    return found


def _drop(services_module) -> None:
    """Forget what is queued and stop each service, so that interpreter exit does not wait on it."""
    for service in list(services_module._active_services):
        with service._queue.mutex:
            service._queue.queue.clear()
        if service._started:
            service._stop(at_exit=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    left = stranded()
    if not left:
        return
    _drop(sys.modules["prefect._internal.concurrency.services"])
    what = ", ".join(f"{name}: {n}" for name, n in sorted(left.items()))
    sys.stderr.write(f"\nPrefect records left for a stopped API at the session's end ({what}): a fixture "
                     "stopped its Prefect API before draining Prefect's workers (conftest.prefect_api); "
                     "they were dropped\n")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
