"""The process of socbench's own Prefect API, spawned before the heavy imports (``cli.prefect_api``
owns and stops it).

The server takes ~3 s to answer on a 2-core box, and socbench's own imports (Prefect's client
and server modules, the flows, pandas, scikit-learn) take as long again; spawned first, the two
overlap. Nothing of Prefect's is imported here.
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


def spawn(port: int, settings: bool = True) -> subprocess.Popen[Any]:
    """Prefect's server app on 127.0.0.1:``port`` in a session of its own (Ctrl-C does not reach it);
    ``settings``: pass this process's Prefect settings on (without, the server reads the same
    environment and profile itself, and ``prefect.settings``' 0.7 s import is not waited for)."""
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
           "PREFECT__SERVER_FINAL": "1"}
    if settings:
        from prefect.settings import get_current_settings

        env.update(get_current_settings().to_environment_variables(exclude_unset=True))
    return subprocess.Popen([sys.executable, "-c", SERVE, str(port)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, start_new_session=True)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn_early() -> int | None:
    """Start the server now, unless ``PREFECT_API_URL`` is in the environment; its port (``claim``
    takes it). A profile may still name an API: ``prefect_api`` then ``discard``s this one."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    port = free_port()
    _early[port] = spawn(port, settings=False)
    return port


def claim(port: int | None) -> subprocess.Popen[Any] | None:
    """The server ``spawn_early`` started on ``port`` (once), else None."""
    return _early.pop(port, None) if port is not None else None


def discard(port: int | None) -> None:
    """Stop the early server on ``port`` if nobody claimed it (an API was configured after all)."""
    process = claim(port)
    if process is not None:
        process.terminate()
        process.wait(timeout=10)
