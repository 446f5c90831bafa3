"""`make ui` (deployments/ui.py) seen from a terminal: the link it prints and Ctrl-C; and the
lines `make demo` prints per domain as it follows its run.

Issue 22: it linked the Scheduled nightly run as "latest issp run" (the runs were sorted by start,
and a scheduled run's expected start is tomorrow) and did not stop within 5 s of SIGINT. A real
Prefect server holds runs made through its REST API: two completed (the one started first ended
last), the nightly one scheduled for tomorrow, one still running; `ui.py` must link the one that
ended last. On a pseudo-terminal (``tests/test_ctrl_c.py``'s pattern) Ctrl-C must end it and the
server it started within seconds, leaving no process. The same server holds a demo run whose
domain runs logged their lines: `make demo`'s follower prints each once, with its seconds.
"""

from __future__ import annotations

import importlib.util
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from socbench.processes import Postgres, PrefectServer, prefect_rest
from support.processes import processes_with_env, readable, session_members, user_prefect_home
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


class Api:
    """Prefect's REST API, JSON in and out, retried as Prefect's own client does (a busy SQLite
    server answers 503 and rolls the call back: seen in CI)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def post(self, path: str, body: dict | list) -> dict:
        return prefect_rest(self.url, path, body) or {}

    def get(self, path: str) -> dict:
        return prefect_rest(self.url, path)

    def run(self, flow: str, name: str, state: dict, **fields) -> dict:
        flow_id = self.post("/flows/", {"name": flow})["id"]
        return self.post("/flow_runs/", {"flow_id": flow_id, "name": name, "state": state, **fields})

    def finish(self, run: dict, kind: str = "COMPLETED", message: str | None = None) -> None:
        state = {"type": kind, "message": message}
        self.post(f"/flow_runs/{run['id']}/set_state", {"state": state, "force": True})


LINE_10 = ("domain 10 SocialNetworks: 5 items, accuracy 0.400 [no CI: n < 10], best baseline "
           "majority answer 0.300 (+0.100), 0 parse failures, 0 engine errors")
LINE_12 = ("domain 12 Leisure: 5 items, INCOMPLETE, not a result (2 engine errors, first: HTTP 503), 0 parse "
           "failures, 2 engine errors")


def _seed_demo_run(api: Api) -> dict:
    """An ``issp`` run and its domain runs as the demo's worker leaves them: domain 10 logs its line and
    completes, 11 fails without one (its data could not be read), 12 logs its INCOMPLETE line and fails."""
    parent = api.run("issp", "demo-run", {"type": "RUNNING"})
    for domain_id in (10, 11, 12):
        task = api.post("/task_runs/", {"flow_run_id": parent["id"], "task_key": "issp-domain",
                                        "dynamic_key": str(domain_id), "name": f"issp-domain-{domain_id}"})
        child = api.run("issp-domain", f"issp-domain-{domain_id}", {"type": "RUNNING"},
                        parameters={"domain_id": domain_id}, parent_task_run_id=task["id"])
        started = datetime.fromisoformat(api.get(f"/flow_runs/{child['id']}")["start_time"])
        line = {10: LINE_10, 12: LINE_12}.get(domain_id)
        logs = [{"name": "prefect.task_runs", "level": 20, "message": message, "flow_run_id": child["id"],
                 "timestamp": (started + timedelta(seconds=seconds)).isoformat()}
                for message, seconds in (("Beginning subflow run", 0.1), (line, 12.34)) if message]
        api.post("/logs/", logs)
        api.finish(child, *(("COMPLETED",) if domain_id == 10 else ("FAILED", f"domain {domain_id} failed")))
    api.finish(parent, "FAILED")
    return parent


def _seed_runs(api: Api) -> None:
    """Runs of flow ``issp`` as a day of the demo leaves them, set through the REST API."""
    _seed_demo_run(api)
    first = api.run("issp", "started-first", {"type": "RUNNING"})
    second = api.run("issp", "started-second", {"type": "RUNNING"})
    api.finish(second)
    api.finish(first)  # ended last: the one to link
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    api.run("issp", "nightly", {"type": "SCHEDULED", "state_details": {"scheduled_time": tomorrow}})
    api.run("issp", "still-running", {"type": "RUNNING"})


@pytest.fixture(scope="module")
def served_state(tmp_path_factory, prefect_db: Path | None) -> Path:
    """A demo state folder whose Prefect database holds the runs of ``_seed_runs``: a copy of the session
    API's database (``prefect_db``, or a fresh one), seeded through a server without UI or services (a
    `make ui` start on a fresh database cost ~20 CPU s)."""
    state = tmp_path_factory.mktemp("ui") / "prefect-demo"
    user_prefect_home(state / "home", prefect_db)
    server = PrefectServer(_env(state), log=state / "seed.log", private=True)
    try:
        _seed_runs(Api(server.start(240).api_url))
    finally:
        server.stop()
    return state


def _links_the_run_that_finished_last(text: str) -> None:
    """What ``ui.py`` printed (``text``) links the run that ended last, and `make demo`'s follower says
    each domain's line once against the API it serves."""
    api = re.search(r"Prefect UI at (http://127\.0\.0\.1:\d+)", text).group(1) + "/api"
    demo = _demo_module()
    parent = Api(api).post("/flow_runs/filter", {"flow_runs": {"name": {"any_": ["demo-run"]}}})[0]
    lines = demo.DomainLines(api, parent["id"])
    said = lines.new()
    assert lines.new() == []  # each said once
    link = re.search(r"latest issp run '([\w-]+)' \((\w+)\): (http://\S+/runs/flow-run/[\w-]+)", text)
    assert link is not None and link.group(1, 2) == ("started-first", "Completed"), text
    # `make demo` follows its run the same way: each domain's line as the CLI prints it, and a domain
    # run that ended without completing
    assert said[:2] == [f"{LINE_10}, 12.3 s", f"{LINE_12}, 12.3 s"], said
    assert sorted(said[2:]) == ["demo: issp-domain-11 Failed: domain 11 failed",
                                "demo: issp-domain-12 Failed: domain 12 failed"], said


def _demo_module():
    """``deployments/local_demo.py``, a script: loaded from its file (no ``sys.path`` edit)."""
    spec = importlib.util.spec_from_file_location("local_demo", ROOT / "deployments" / "local_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("when", ["starting", "serving"])
def test_ctrl_c_stops_ui_and_its_server_within_seconds(served_state: Path, when: str) -> None:
    """Ctrl-C while the server starts (it answers no health check yet) or once the links are printed
    (then, before the Ctrl-C, the links and the demo's lines are checked against that server)."""
    env = _env(served_state)
    home = env["PREFECT_HOME"]
    pid, master = pty.fork()
    if pid == 0:  # the child: session leader, the pty its controlling terminal
        os.chdir(ROOT)
        # as a background job of a script starts it (bash ignores SIGINT there; an exec keeps the
        # ignore): Ctrl-C on its own terminal must stop it all the same
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.execve(sys.executable, [*UI, "--state", str(served_state)], env)
    shown, status = [b""], None

    def read() -> str:
        if readable(master, 0.1):
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
        if when == "serving":
            _links_the_run_that_finished_last(read())
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


def test_ui_serves_a_postgres_demo_state_and_stops_the_cluster_too() -> None:
    """`make demo` keeps Prefect's database in a PostgreSQL cluster (``.prefect-demo/postgres``) where
    PostgreSQL is installed: `make ui` starts that cluster, serves it, and stops both."""
    top = Path(tempfile.mkdtemp(prefix="socbench-ui-pg-"))
    top.chmod(0o755)  # as root the cluster runs as the postgres user, who must reach it
    state = top / "prefect-demo"
    try:
        if not Postgres.available(state):
            pytest.skip("PostgreSQL not found (make setup installs Debian's postgresql)")
        Postgres(folder=state / "postgres").start().stop()  # as the demo's first run makes it: no tables
        ui, api = _serve(state, top / "ui.out")
        try:
            assert prefect_rest(api, "/flow_runs/filter", {}) == []  # its database answers: no runs yet
        finally:
            _stop(ui)
        assert processes_with_env("PREFECT_HOME", str(state / "home")) == []  # the server and the cluster
        assert not (state / "postgres" / "data" / "postmaster.pid").exists()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_server_whose_start_is_interrupted_is_stopped(tmp_path: Path) -> None:
    """`make demo` enters ``PrefectServer`` as a context: Ctrl-C while it starts (before ``__exit__`` is
    registered) left the server running."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    home = str(tmp_path / "home")
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # well before its health check answers
    try:
        with pytest.raises(KeyboardInterrupt), PrefectServer({**_env(tmp_path), "PREFECT_HOME": home}):
            pytest.fail("the server answered within a second")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert processes_with_env("PREFECT_HOME", home) == []


def test_a_ctrl_c_as_the_server_process_starts_stops_it(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C between the server's process starting and ``Popen`` returning it (a fresh-clone suite under
    load: `make ui` exited at once and its server ran on) is held until the process is
    known, then stops it."""
    home, real = str(tmp_path / "home"), subprocess.Popen

    def interrupted(*args, **kwargs) -> subprocess.Popen:
        proc = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return proc

    monkeypatch.setattr(subprocess, "Popen", interrupted)
    # Ctrl-C raises, as in `make ui` (an xdist worker ignores SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), PrefectServer({**_env(tmp_path), "PREFECT_HOME": home}):
            pytest.fail("the Ctrl-C was lost")
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.undo()
    _wait(lambda: processes_with_env("PREFECT_HOME", home) == [], "end of the server", 5)
