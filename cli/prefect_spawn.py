"""The process of socbench's own Prefect API, spawned before the heavy imports (``cli.prefect_api``
owns and stops it).

The server takes ~3 s to answer on a 2-core box, and socbench's own imports (Prefect's client
and server modules, the flows, pandas, scikit-learn) take as long again; spawned first, the two
overlap. Only ``prefect.settings`` is imported here, for the settings the server must share.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

# Run as ``python -c`` with the port: Prefect's server app under uvicorn (as Prefect runs it),
# plus a thread that ends the server when socbench's end of the stdin pipe closes.
SERVE = """
import os, signal, sys, threading
import uvicorn
def _orphaned():
    sys.stdin.buffer.read()
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=_orphaned, daemon=True).start()
uvicorn.run("prefect.server.api.server:create_app", factory=True, host="127.0.0.1", port=int(sys.argv[1]),
            log_level="error", lifespan="on")
"""

_early: dict[int, subprocess.Popen[Any]] = {}  # port -> a spawned server nobody has claimed yet


def spawn(port: int) -> subprocess.Popen[Any]:
    """Prefect's server app on 127.0.0.1:``port`` in a session of its own (Ctrl-C does not reach it)."""
    from prefect.settings import get_current_settings

    settings = get_current_settings().to_environment_variables(exclude_unset=True)
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
           "PREFECT__SERVER_FINAL": "1", **settings}
    return subprocess.Popen([sys.executable, "-c", SERVE, str(port)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, start_new_session=True)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn_early() -> int | None:
    """Start the server now, unless a ``PREFECT_API_URL`` is set; its port (``claim`` takes it)."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return None
    port = free_port()
    _early[port] = spawn(port)
    return port


def claim(port: int | None) -> subprocess.Popen[Any] | None:
    """The server ``spawn_early`` started on ``port`` (once), else None."""
    return _early.pop(port, None) if port is not None else None
