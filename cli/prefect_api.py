"""socbench's own Prefect API for an in-process run, out of reach of the terminal's Ctrl-C.

Without a ``PREFECT_API_URL``, Prefect starts a temporary server itself, in socbench's
process group: a Ctrl-C at the terminal (SIGINT to the whole group) killed that server first,
and socbench then spent minutes reporting connection errors instead of saving its work. This
one is Prefect's own server app (``SubprocessASGIServer``, the same database under
``PREFECT_HOME``), started in a session of its own (``start_new_session``), so it only stops
when socbench has finished: its workers' logs and events are drained first, then it is
terminated. It also stops by itself when socbench dies, however (its stdin, a pipe from
socbench, reaches end-of-file), so nothing is ever left running.

With ``PREFECT_API_URL`` set (a server of the user's, or a test's), that API is used as it is.
"""

from __future__ import annotations

import contextlib
import contextvars
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

from prefect.server.api.server import SubprocessASGIServer

from cli.prefect_spawn import claim, spawn


class OwnPrefectApi(SubprocessASGIServer):
    """Prefect's temporary API server (its start-up, health wait and stop), in its own session."""

    _instances: dict[int | None, SubprocessASGIServer] = {}  # apart from Prefect's own registry

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:  # Prefect 3.7.7's launch hook
        return claim(self.port) or spawn(self.port)

    def stop(self) -> None:
        """Drain Prefect's log and event workers into the API, then terminate it."""
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        for worker in (APILogWorker, EventsWorker):
            with contextlib.suppress(Exception):
                worker.drain_all(timeout=5)
        super().stop()


class _Starting:
    """The API's start (~8-13 s on a 2-core box) on a thread, so the caller can load a model meanwhile."""

    def __init__(self, api: OwnPrefectApi) -> None:
        self.error: BaseException | None = None
        run_here = contextvars.copy_context().run  # the caller's Prefect settings, in the thread
        self.thread = threading.Thread(target=run_here, args=(self._start, api), name="prefect-api-start",
                                       daemon=True)
        self.thread.start()

    def _start(self, api: OwnPrefectApi) -> None:
        try:
            api.start()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread by wait()
            self.error = exc

    def wait(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error


@contextlib.contextmanager
def prefect_api(meanwhile: Callable[[], object] | None = None, port: int | None = None) -> Iterator[str]:
    """The Prefect API the in-process flows use while inside; its URL. ``meanwhile`` (loading the
    model) runs in this thread while the API starts, so the two waits overlap; ``port``: the one
    ``cli.prefect_spawn.spawn_early`` started. Flow-run heartbeats are off on this API: they only
    feed crash detection on a shared server, and each flow run's end waited up to 1 s for them."""
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    if PREFECT_API_URL.value():
        if meanwhile is not None:
            meanwhile()
        yield PREFECT_API_URL.value()
        return
    api = OwnPrefectApi(port)
    starting = _Starting(api)
    prior = SubprocessASGIServer._instances.get(None)
    SubprocessASGIServer._instances[None] = api  # Prefect code that would start its own finds this one
    try:
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
            starting.wait()
        no_heartbeats = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
        with temporary_settings(updates={PREFECT_API_URL: api.api_url, **no_heartbeats}):
            yield api.api_url
    finally:
        api.stop()
        if prior is not None:
            SubprocessASGIServer._instances[None] = prior
        else:
            SubprocessASGIServer._instances.pop(None, None)
