"""Engine teardown: release every engine of this process; idempotent."""

from __future__ import annotations

import logging

from prefect import get_run_logger

from socbench.engines.session import close_engines
from socbench.tasks import stage


@stage
def teardown() -> int:
    closed = close_engines()
    get_run_logger().info("engine teardown: %d engine(s) closed", closed)
    return closed


def teardown_safely() -> None:
    """For ``finally`` blocks: run the task, or close directly when no task can run (a cancelled or
    crashing flow)."""
    try:
        teardown()
    except BaseException:  # noqa: BLE001 - teardown must happen whatever state Prefect is in
        try:
            close_engines()
        except Exception as exc:  # noqa: BLE001 - never mask the error that ended the flow
            logging.getLogger("socbench").warning("engine teardown failed: %s", exc)
