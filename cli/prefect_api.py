"""socbench's own Prefect API for an in-process run, out of reach of the terminal's Ctrl-C.

Why: a temporary server Prefect starts itself sits in socbench's process group, so Ctrl-C killed it first
and socbench spent minutes on connection errors. This one (``PrefectServer``) runs in a session of its
own, spawned before the heavy imports, logging to a file in the run's cache folder (named in any error that
escapes the run). With ``PREFECT_API_URL`` set, or a profile naming one, that API is used and nothing started.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from socbench.errors import EngineError
from socbench.processes import PrefectServer


def spawn_early(log: Path) -> PrefectServer | None:
    """Start the server now (no wait), its output appended to ``log``, unless ``PREFECT_API_URL`` is in the
    environment."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    return PrefectServer(private=True, log=log).spawn()


def use_everywhere(url: str | None) -> None:
    """``PREFECT_API_URL`` for this process, threads without the caller's context included."""
    from prefect.context import refresh_global_settings_context

    if url is None:
        os.environ.pop("PREFECT_API_URL", None)
    else:
        os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()


def drain() -> None:
    """Prefect's log and event workers into the API, before it stops."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=5)


@contextlib.contextmanager
def prefect_api(meanwhile: Callable[[], object] | None = None,
                server: PrefectServer | None = None) -> Iterator[str]:
    """The API the in-process flows use while inside (``server``, the one ``spawn_early`` started, once it
    answers: the wait is said on stderr); its URL. ``meanwhile`` runs while it starts. Flow-run heartbeats
    are off: they only feed crash detection on a shared server, and each flow run's end waited up to 1 s
    for them."""
    try:
        if meanwhile is not None:
            meanwhile()
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
            PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
            temporary_settings,
        )

        configured = PREFECT_API_URL.value()
        if configured or server is None:  # a profile names an API after all: ours stopped now
            if server is not None:
                server.stop()
            yield configured
            return
        start = time.perf_counter()
        server.wait(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
        waited = time.perf_counter() - start
        print(f"socbench: this run waited {waited:.1f} s for its own Prefect API (one kept running and named "
              "by PREFECT_API_URL saves it: docs/prefect.md)", file=sys.stderr)
        use_everywhere(server.api_url)
        try:
            with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                yield server.api_url
        except Exception as exc:
            _name_the_log(exc, server)
            raise
        finally:
            drain()
        # only after a run that ended normally: after Ctrl-C or an error, threads of the run may still
        # be finishing, and without an API URL Prefect would start a temporary server for them
        use_everywhere(None)
    finally:
        if server is not None:
            server.stop()


def _name_the_log(exc: Exception, server: PrefectServer) -> None:
    """An API that died under the run is the cause, said in one line; other errors get its log as a note."""
    code = server.proc.poll() if server.proc is not None else None
    if code is not None:
        raise EngineError(f"socbench's Prefect API at {server.url} exited (code {code}) during the run; its "
                          f"log: {server.log}; rerun the same command to finish the run") from exc
    exc.add_note(f"socbench's Prefect API log: {server.log}")
