"""socbench's own Prefect API (``cli.prefect_api``): ``prefect server start`` spawned early, named
by ``PREFECT_API_URL`` for the whole process while a run lasts, and gone after.

Issue 15: the CLI spawns the API's server before its heavy imports and never imports Prefect's
server modules itself (1.7 s). Issue 22: no import hooks or private attributes of Prefect's;
every thread of the process (those without the caller's context too) uses the same API, so
Prefect never starts a temporary server of its own (its module is never imported). The server logs to
the file it is given, and an API that dies under a run is named, with that log, in one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from support.processes import user_prefect_home
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # starts a Prefect API server in a subprocess

CHILD = """
import os, sys, threading
from pathlib import Path
from socbench.cli.prefect_api import prefect_api, spawn_early
from prefect import flow

@flow
def one() -> int:
    return 1

server = spawn_early(Path(sys.argv[1]))
with prefect_api(server=server) as url:
    assert url == server.api_url == os.environ["PREFECT_API_URL"], url
    assert one() == 1
    from prefect.settings import get_current_settings
    assert get_current_settings().flows.heartbeat_frequency is None
    seen = []
    thread = threading.Thread(target=lambda: seen.append(get_current_settings().api.url))
    thread.start(); thread.join()
    assert seen == [url], seen  # a thread without this context: the same API
assert "prefect.server.api.server" not in sys.modules  # Prefect started no server of its own
assert "PREFECT_API_URL" not in os.environ and server.proc is None
print("ok", server.port)
"""


KILLED = """
import signal, sys
from pathlib import Path
from socbench.cli.prefect_api import prefect_api, spawn_early
from socbench.errors import EngineError
from socbench.processes import signal_group
from prefect import flow

@flow
def one() -> int:
    return 1

server = spawn_early(Path(sys.argv[1]))
try:
    with prefect_api(server=server):
        assert one() == 1
        proc = server.proc
        signal_group(proc, signal.SIGKILL)
        proc.wait(60)
        one()
except EngineError as exc:
    print(exc)
"""


def child(script: str, tmp_path, log, database) -> subprocess.CompletedProcess:
    """``script`` in a process whose Prefect home holds a copy of the session API's database (``prefect_db``):
    its server starts as on a user's later runs (11 CPU s, not the 21 of a fresh one that migrates)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(user_prefect_home(tmp_path / "prefect", database))
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1", PYTHONPATH=str(ROOT),
               PREFECT_CLIENT_MAX_RETRIES="0")
    return subprocess.run([sys.executable, "-c", script, str(log)], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_early_server_is_the_api_of_every_thread_and_is_gone_after(tmp_path, prefect_db):
    log = tmp_path / "cache" / "prefect-api.log"
    run = child(CHILD, tmp_path, log, prefect_db)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stderr[-3000:]
    assert log.is_file()  # its own output goes to the log it was given
    port = int(run.stdout.split()[1])
    listening = subprocess.run(["ss", "-ltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    assert f":{port}" not in listening  # the server has stopped


def test_an_api_that_dies_under_the_run_is_named_with_its_log(tmp_path, prefect_db):
    """Seen once under load: the run's API went away mid-run and left nothing to read. Now one line says so,
    with the log, and what to do."""
    log = tmp_path / "cache" / "prefect-api.log"
    run = child(KILLED, tmp_path, log, prefect_db)
    assert run.returncode == 0, run.stderr[-3000:]
    line = run.stdout.strip()
    expected = (rf"socbench's Prefect API at http://127\.0\.0\.1:\d+ exited \(code -9\) during the run; "
                rf"its log: {re.escape(str(log))}; rerun the same command to finish the run")
    assert re.fullmatch(expected, line), line
