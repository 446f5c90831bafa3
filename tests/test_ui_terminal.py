"""`make ui` (deployments/ui.py) seen from a terminal: the link it prints and Ctrl-C.

Issue 22: it linked the Scheduled nightly run as "latest issp run" (the runs were sorted by start,
and a scheduled run's expected start is tomorrow) and did not stop within 5 s of SIGINT. A real
Prefect server holds runs made through its REST API: two completed (the one started first ended
last), the nightly one scheduled for tomorrow, one still running; `ui.py` must link the one that
ended last. On a pseudo-terminal (``tests/test_ctrl_c.py``'s pattern) Ctrl-C must end it and the
server it started within seconds, leaving no process.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from support.processes import processes_with_env, session_members
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
UI = [sys.executable, str(ROOT / "deployments" / "ui.py")]
READY = "ui: artifacts"  # its last line once the server is up and the links are printed


def _env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    return {**env, "PREFECT_HOME": str(state / "home"), "TERM": "dumb"}


def _wait(condition, what: str, timeout_s: float, text=lambda: "") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {timeout_s:.0f} s: {text()[-3000:]}"
        time.sleep(0.1)


def _serve(state: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`ui.py` on ``state`` in a session of its own; (it, the API URL) once it printed its links."""
    handle = log.open("w")
    ui = subprocess.Popen([*UI, "--state", str(state)], stdout=handle, stderr=subprocess.STDOUT,
                          env=_env(state), start_new_session=True)
    handle.close()
    _wait(lambda: READY in log.read_text() or ui.poll() is not None, "printed URL", 240, log.read_text)
    assert ui.poll() is None, log.read_text()
    return ui, re.search(r"Prefect UI at (http://127\.0\.0\.1:\d+)", log.read_text()).group(1) + "/api"


def _stop(ui: subprocess.Popen) -> None:
    os.killpg(ui.pid, signal.SIGTERM)
    ui.wait(timeout=60)


def _seed_runs(api: str) -> None:
    """Runs of flow ``issp`` as a day of the demo leaves them, set through the REST API."""
    with httpx.Client(base_url=api, timeout=60) as client:
        def post(path: str, body: dict) -> dict:
            response = client.post(path, json=body)
            response.raise_for_status()
            return response.json()

        flow = post("/flows/", {"name": "issp"})["id"]

        def run(name: str, state: dict) -> str:
            return post("/flow_runs/", {"flow_id": flow, "name": name, "state": state})["id"]

        def finish(run_id: str) -> None:
            post(f"/flow_runs/{run_id}/set_state", {"state": {"type": "COMPLETED"}, "force": True})

        first, second = run("started-first", {"type": "RUNNING"}), run("started-second", {"type": "RUNNING"})
        finish(second)
        finish(first)  # ended last: the one to link
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        run("nightly", {"type": "SCHEDULED", "state_details": {"scheduled_time": tomorrow}})
        run("still-running", {"type": "RUNNING"})


@pytest.fixture(scope="module")
def served_state(tmp_path_factory) -> Path:
    """A demo state folder whose Prefect database holds the runs of ``_seed_runs``."""
    state = tmp_path_factory.mktemp("ui") / "prefect-demo"
    (state / "home").mkdir(parents=True)
    subprocess.run([str(Path(sys.executable).parent / "prefect"), "server", "database", "upgrade", "-y"],
                   env=_env(state), check=True, capture_output=True, timeout=300)
    ui, api = _serve(state, state / "seed.out")
    try:
        _seed_runs(api)
    finally:
        _stop(ui)
    return state


def test_ui_links_the_run_that_finished_last(served_state: Path, tmp_path: Path) -> None:
    ui, _ = _serve(served_state, tmp_path / "ui.out")
    _stop(ui)
    text = (tmp_path / "ui.out").read_text()
    link = re.search(r"latest issp run '([\w-]+)' \((\w+)\): (http://\S+/runs/flow-run/[\w-]+)", text)
    assert link is not None and link.group(1, 2) == ("started-first", "Completed"), text


@pytest.mark.parametrize("when", ["starting", "serving"])
def test_ctrl_c_stops_ui_and_its_server_within_seconds(served_state: Path, when: str) -> None:
    """Ctrl-C while the server starts (it answers no health check yet) or once the links are printed."""
    env = _env(served_state)
    home = env["PREFECT_HOME"]
    pid, master = pty.fork()
    if pid == 0:  # the child: session leader, the pty its controlling terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [*UI, "--state", str(served_state)], env)
    shown, status = [b""], None

    def read() -> str:
        if select.select([master], [], [], 0.1)[0]:
            try:
                shown[0] += os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has gone
                pass
        return shown[0].decode(errors="replace")

    def exited() -> bool:
        nonlocal status
        read()
        done, code = os.waitpid(pid, os.WNOHANG)
        status = code if done else None
        return status is not None

    def ready() -> bool:
        if when == "serving":
            return READY in read()
        return [p for p in processes_with_env("PREFECT_HOME", home) if p != pid] != []  # the server started

    try:
        _wait(lambda: ready() or exited(), f"{when} server", 240, read)
        assert status is None, read()
        os.write(master, b"\x03")
        typed = time.monotonic()
        _wait(exited, "exit after Ctrl-C", 10, read)
        seconds = time.monotonic() - typed
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    text = shown[0].decode(errors="replace")
    print(f"ui ({when}): exit {os.waitstatus_to_exitcode(status)}, {seconds:.1f} s after Ctrl-C")
    assert seconds < 5 and os.waitstatus_to_exitcode(status) == 0, text[-3000:]
    assert "ui: stopping the server" in text and "Traceback" not in text, text[-3000:]
    # nothing left: not in its session, nor the server it started in a session of its own
    _wait(lambda: session_members(pid) == [] and processes_with_env("PREFECT_HOME", home) == [],
          "end of every process it started", 5)
