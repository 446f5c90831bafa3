"""One session Prefect API for all of pytest-xdist's workers (``make test``: 3), not one per worker.

Why: each server's start costs 10-20 CPU s (it imports Prefect's server and migrates a fresh SQLite
database), and the workers' in-process flows and CLI runs need only one. The xdist controller lives the
whole session, so it owns the server; a worker may end early (``--dist loadscope`` shuts down an idle one)
and must not take the server with it. The controller only knows the test ids, not their fixtures, so a
worker that will use the API (``conftest._uses_session_api``) asks for it: it writes ``WANTED`` into the
shared folder (named to the workers by ``FOLDER_ENV``), the controller's thread spawns the server and
writes its URL to ``URL`` once it answers (or ``FAILED`` with the reason). The server's database is
``prefect.db`` in that folder (``conftest.prefect_db`` copies it). A run without xdist spawns its own, as
before (``conftest.pytest_collection_finish``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from socbench.processes import PrefectServer, answers, free_port, wait_for

FOLDER_ENV = "SOCBENCH_TEST_SESSION_API"  # the folder, set by the controller before its workers start
WANTED, URL, FAILED = "wanted", "url", "failed"


class Controller:
    """The controller's side: spawns the server (``make()``) once a worker asks, stops it at the end."""

    def __init__(self, folder: Path, make: Callable[[], PrefectServer], startup_s: float) -> None:
        self.folder, self.make, self.startup_s = folder, make, startup_s
        self.server: PrefectServer | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="session-prefect-api", daemon=True)

    def start(self) -> Controller:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def _serve(self) -> None:
        while not (self.folder / WANTED).exists():
            if self.done.wait(0.2):
                return
        self.server = self.make()
        try:
            self._start(self.server)
        except Exception as exc:  # noqa: BLE001 - the workers say why, with the server's log
            self.server.stop()
            (self.folder / FAILED).write_text(f"{type(exc).__name__}: {exc}")
            return
        if self.done.is_set():  # the session ended while it started
            return
        (self.folder / f"{URL}.tmp").write_text(self.server.api_url)
        (self.folder / f"{URL}.tmp").rename(self.folder / URL)  # whole, never half-written
        # this thread lives as long as the server: it was spawned with ``--pdeathsig`` (``private``), which
        # fires when the spawning thread ends, not only its process
        self.done.wait()

    def _start(self, server: PrefectServer) -> None:
        """``server`` spawned and answering, or the session over (``done``); one that exited (its free
        port taken meanwhile) started once more on another. Not ``PrefectServer.wait``: ``stop`` may run
        meanwhile, and that would spawn it again."""
        def exited() -> bool:
            return server.proc is not None and server.proc.poll() is not None

        for _ in range(2):
            server.spawn()
            wait_for(lambda: self.done.is_set() or exited() or answers(f"{server.api_url}/health"),
                     self.startup_s, f"the session's Prefect API at {server.url} (log: {server.log})")
            if not exited():
                return
            server.port = free_port()
        raise RuntimeError(f"the session's Prefect API exited twice (log: {server.log})")

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        if self.server is not None:
            self.server.stop()


class Shared:
    """A worker's side: the controller's server, asked for by ``want()``; ``wait`` and ``api_url`` as a
    ``PrefectServer``'s, ``stop`` nothing (the controller stops it after every worker has drained into it)."""

    proc = "the controller's"  # not None: ``conftest.prefect_api`` spawns no server for it

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url: str | None = None

    def want(self) -> Shared:
        (self.folder / WANTED).touch()
        return self

    def wait(self, timeout_s: float) -> Shared:
        def known() -> str | None:
            if (failed := self.folder / FAILED).exists():
                raise RuntimeError(f"the session's Prefect API did not start: {failed.read_text()}")
            return (self.folder / URL).read_text() if (self.folder / URL).exists() else None

        self.url = self.url or wait_for(known, timeout_s, "the controller's session Prefect API", 0.2)
        wait_for(lambda: answers(f"{self.url}/health"), 60, f"the session's Prefect API at {self.url}")
        return self

    @property
    def api_url(self) -> str:
        assert self.url is not None, "wait() first"
        return self.url

    @property
    def database(self) -> Path:
        return self.folder / "prefect.db"

    def stop(self) -> None:
        """The controller's to stop."""
