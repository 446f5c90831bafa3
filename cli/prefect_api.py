"""socbench's own Prefect API for an in-process run, out of reach of the terminal's Ctrl-C.

Without a ``PREFECT_API_URL``, Prefect starts a temporary server itself, in socbench's
process group: a Ctrl-C at the terminal (SIGINT to the whole group) killed that server first,
and socbench then spent minutes reporting connection errors instead of saving its work. This
one is Prefect's own server app (as its ``SubprocessASGIServer`` runs it, the same database under
``PREFECT_HOME``), started in a session of its own (``start_new_session``), so it only stops
when socbench has finished: its workers' logs and events are drained first, then it is
terminated. It also stops by itself when socbench dies, however (its stdin, a pipe from
socbench, reaches end-of-file), so nothing is ever left running.

With ``PREFECT_API_URL`` set (a server of the user's, or a test's), that API is used as it is.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from cli.prefect_spawn import claim, discard, free_port, spawn

SERVER_MODULE = "prefect.server.api.server"  # 1.7 s to import: only loaded when Prefect itself needs it


class OwnPrefectApi:
    """Prefect's temporary API server in a session of its own: what Prefect's ``SubprocessASGIServer``
    offers its callers (``start``, ``stop``, ``api_url``), without importing Prefect's server modules
    into socbench (the server process has them)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.process: Any = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self, timeout: float | None = None) -> None:
        """Spawn the server (or take the early one), wait until ``/health`` answers; once."""
        if self.process is not None:
            return
        import httpx
        from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

        deadline = time.monotonic() + (timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
        self.process = claim(self.port) or spawn(self.port)
        respawned = False
        with httpx.Client() as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:  # exited: the port may have been taken meanwhile
                    if respawned:
                        break
                    self.port, respawned = free_port(), True
                    self.process = spawn(self.port)
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        return
                time.sleep(0.1)
        code = self.process.poll()
        raise RuntimeError("Timed out while attempting to connect to socbench's Prefect API server"
                           + (f" (it exited with code {code})" if code is not None else ""))

    def stop(self) -> None:
        """Drain Prefect's log and event workers into the API, then terminate it."""
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        for worker in (APILogWorker, EventsWorker):
            with contextlib.suppress(Exception):
                worker.drain_all(timeout=5)
        process, self.process = self.process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except Exception:  # noqa: BLE001 - not gone in 5 s
                process.kill()
                process.wait()


class _StandIn:
    """While socbench's API runs, Prefect code that would start a temporary server of its own
    (``SubprocessASGIServer()``, its registry's ``None`` entry) gets this one: set at once if
    Prefect's server module is loaded, else when something first imports it."""

    def __init__(self, api: OwnPrefectApi) -> None:
        self.api, self.prior, self.hooked = api, None, False
        if SERVER_MODULE in sys.modules:
            self._register(sys.modules[SERVER_MODULE])
        else:
            sys.meta_path.insert(0, self)  # type: ignore[arg-type]
            self.hooked = True

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != SERVER_MODULE:
            return None
        self._unhook()
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def load_and_register(module: Any) -> None:
                load(module)
                self._register(module)

            spec.loader.exec_module = load_and_register  # type: ignore[method-assign]
        return spec

    def _register(self, module: Any) -> None:
        self.prior = module.SubprocessASGIServer._instances.get(None)
        module.SubprocessASGIServer._instances[None] = self.api

    def _unhook(self) -> None:
        if self.hooked:
            self.hooked = False
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)  # type: ignore[arg-type]

    def remove(self) -> None:
        self._unhook()
        module = sys.modules.get(SERVER_MODULE)
        if module is not None and module.SubprocessASGIServer._instances.get(None) is self.api:
            if self.prior is not None:
                module.SubprocessASGIServer._instances[None] = self.prior
            else:
                module.SubprocessASGIServer._instances.pop(None, None)


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
        discard(port)
        if meanwhile is not None:
            meanwhile()
        yield PREFECT_API_URL.value()
        return
    api = OwnPrefectApi(port)
    starting = _Starting(api)
    stand_in = _StandIn(api)
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
        stand_in.remove()
