"""Start Prefect's temporary API server early, so its start-up overlaps with other work.

An in-process run (``socbench mcq``) without ``PREFECT_API_URL`` makes Prefect start a
temporary API server (a uvicorn subprocess) on the flow's first call: 6-13 s here, with the
calling process idle meanwhile (issue 15). ``start_in_background`` begins that start at
once on a thread, so the server boots in its own process while this one imports, reads the
data and loads the model; ``wait`` joins it before the flow runs (Prefect's own start would
otherwise return early while the server is not yet healthy). With ``PREFECT_API_URL`` set
(a running server) nothing is started and the run uses that server.
"""

from __future__ import annotations

import contextvars
import os
import threading


class ServerStart:
    """A background start of Prefect's temporary API server (a no-op with ``PREFECT_API_URL``)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def starting(self) -> bool:
        """True unless ``PREFECT_API_URL`` is in the environment (a Prefect profile naming a server is
        only seen in the thread, which then starts nothing)."""
        return self._thread is not None

    def start_in_background(self) -> ServerStart:
        if os.environ.get("PREFECT_API_URL"):
            return self
        run_here = contextvars.copy_context().run  # the caller's Prefect settings context, in the thread
        self._thread = threading.Thread(target=run_here, args=(self._start,), name="prefect-api-start",
                                        daemon=True)
        self._thread.start()
        return self

    def _start(self) -> None:
        try:
            from prefect.settings import get_current_settings

            if get_current_settings().api.url:  # a server named by a profile or a test harness
                return
            from prefect.server.api.server import SubprocessASGIServer

            SubprocessASGIServer().start()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread by wait()
            self._error = exc

    def wait(self) -> None:
        """Block until the server answers (or raise why it could not start)."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
