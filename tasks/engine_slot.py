"""Engine slots: a Prefect global concurrency limit held while a run's engine may be loaded, so that two
big models never land on one GPU host at once. The slots are leased: a worker killed while holding them
frees them once the lease runs out, so a dead host never blocks the pool for long.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from prefect import get_run_logger
from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError
from prefect.concurrency.sync import concurrency

from socbench.errors import ConfigError

LEASE_S = 60.0  # the server's minimum; renewed in the background while the run lives


@contextmanager
def engine_slot(limit: str | None, slots: int) -> Iterator[None]:
    """Hold ``slots`` of the global concurrency limit ``limit`` (``{host}``: this worker's ``SOCBENCH_HOST``,
    else its host name) while inside; none, or no slots: hold nothing."""
    if not limit or slots < 1:
        yield
        return
    name = limit.format(host=os.environ.get("SOCBENCH_HOST") or socket.gethostname())
    logger = get_run_logger()
    logger.info("engine slots: waiting for %d of %r", slots, name)
    with ExitStack() as stack:
        try:
            stack.enter_context(concurrency(name, occupy=slots, lease_duration=LEASE_S, strict=True))
        except ConcurrencySlotAcquisitionError as exc:
            raise ConfigError(f"engine_limit {name!r}: {exc} (create the limit once: "
                              f"prefect gcl create {name} --limit <engines at once>)") from None
        logger.info("engine slots: holding %d of %r", slots, name)
        yield
