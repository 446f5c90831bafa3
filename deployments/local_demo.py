"""`make demo`: a local Prefect server + process worker, deploy, run `issp/all-domains`.

Everything it starts lives under `.prefect-demo/` and is stopped on exit, also on Ctrl-C. Prefect's
database is a PostgreSQL cluster there where Debian's PostgreSQL is installed: on SQLite the server's own
writes fail with "database is locked" under load.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

from socbench.processes import (
    Postgres,
    PrefectServer,
    cpu_defaults,
    free_port,
    sigint_raises,
    signals_held,
    start_group,
    stop_group,
)
from socbench.processes import prefect_rest as api

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".prefect-demo"
BIN = Path(sys.executable).parent
# ``-m prefect``, not the venv's script: a script's shebang names the python it was installed with, which in a
# copied or hard-linked venv is another checkout's (its worker then runs that checkout's flows)
PREFECT = [sys.executable, "-m", "prefect"]
POOL = "socbench-local"
QUEUE = "make-demo"  # the demo's runs only: not a nightly run left scheduled while no worker was up
SILENT = (OSError, http.client.HTTPException, ValueError)  # what a call gives up with (ValueError: not JSON)


def demo_env(port: int, state: Path = STATE) -> dict[str, str]:
    """Project-local Prefect state, the engine's CPU settings, and the project dir for pull steps."""
    env = {
        **os.environ,
        "PREFECT_HOME": str(state / "home"),
        "PREFECT_MEMO_STORE_PATH": str(state / "home" / "memo_store.toml"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(state / "home" / "results"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # the worker starts once the run exists; on a busy host it polls after Prefect's 15 s: not "Late"
        "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
        "PREFECT_LOGGING_EXTRA_LOGGERS": "socbench",
        "SOCBENCH_PROJECT_DIR": str(ROOT),
        "TMPDIR": str(state / "tmp"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.setdefault("SOCBENCH_HOME", str(ROOT / ".socbench"))
    cpu_defaults(env)
    return env


def database(stack: ExitStack, state: Path) -> dict[str, str]:
    """Prefect's server pointed at the demo's PostgreSQL cluster (made on the first run, stopped on exit), or
    nothing: SQLite in ``state/home``."""
    folder = state / "postgres"
    if not Postgres.available(folder):
        print("demo: Prefect's database is SQLite: PostgreSQL is not installed (`make setup` as root "
              "installs it) or the postgres user cannot reach this folder; under load the server may log "
              "'database is locked'", flush=True)
        return {}
    print(f"demo: Prefect's database is PostgreSQL, kept in {folder}", flush=True)
    return {"PREFECT_API_DATABASE_CONNECTION_URL": stack.enter_context(Postgres(folder=folder)).url}


def start(stack: ExitStack, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a background process in its own group; stopped (TERM, then KILL) on exit, also after a
    Ctrl-C while it starts."""
    with signals_held(signal.SIGINT, signal.SIGTERM):
        proc = start_group(args, env, log, cwd=ROOT)
        stack.callback(stop_group, proc)
    return proc


def prefect(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*PREFECT, *args], env=env, cwd=ROOT, check=True)


def pool_exists(url: str) -> bool:
    try:
        api(url, f"/work_pools/{POOL}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def convert_model(stack: ExitStack, env: dict[str, str]) -> None:
    """The embedded model's one conversion (GGUF -> HF folder), beside the server's start rather than in the
    flow; the flow's engine waits for it (a file lock)."""
    from socbench.models import DEFAULT_MODEL, model_slug
    from socbench.models.smollm2 import read_marker

    if read_marker(Path(env["SOCBENCH_HOME"]) / "models" / model_slug(DEFAULT_MODEL)) is not None:
        return
    print(f"demo: converting {DEFAULT_MODEL} (GGUF -> HF folder in {env['SOCBENCH_HOME']}, once) meanwhile",
          flush=True)
    code = f"from socbench.models import resolve_model; resolve_model({DEFAULT_MODEL!r})"
    start(stack, [sys.executable, "-c", code], env, STATE / "convert.log")


FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def create_run(url: str, deployment: str) -> dict:
    """A run of ``deployment`` in the demo's queue (the idempotency key: a retried call, the same run)."""
    found = api(url, f"/deployments/name/{deployment}")
    run = api(url, f"/deployments/{found['id']}/create_flow_run",
              {"idempotency_key": str(uuid.uuid4()), "work_queue_name": QUEUE})
    page = f"{url.removesuffix('/api')}/runs/flow-run/{run['id']}"
    print(f"demo: flow run '{run['name']}' of {deployment}: {page}", flush=True)
    return run


def watch(url: str, run: dict, label: str, gone: Callable[[], str | None]) -> bool:
    """Follow ``run`` until it ends (True: it completed): a line per state and per finished domain. An API
    that does not answer is one line while the run goes on; ``gone()`` names a process the run needs that
    has exited, which ends the watch. Over REST rather than ``prefect deployment run --watch``: no second
    Prefect import (~2 s), and the end is seen within half a second."""
    seen, domains, tick, silent_since = None, DomainLines(url, run["id"]), 0, None
    while True:
        try:
            state = api(url, f"/flow_runs/{run['id']}", tries=3, timeout_s=20)["state"]
            if silent_since is not None:
                print(f"demo: the Prefect API answers again ({time.monotonic() - silent_since:.0f} s later)",
                      flush=True)
                silent_since = None
            if state["name"] != seen:
                seen = state["name"]
                print(f"demo: {label}: {seen}", flush=True)
            if tick % 4 == 0 or state["type"] in FINAL:  # domains take a while: every 2 s is soon enough
                for line in domains.new():
                    print(line, flush=True)
        except SILENT as exc:
            if (reason := gone()) is not None:
                print(f"demo: {reason}; the run cannot go on", flush=True)
                return False
            if silent_since is None:
                silent_since = time.monotonic()
                print(f"demo: the Prefect API does not answer ({type(exc).__name__}: {exc}); the run goes on "
                      "and this keeps asking (Ctrl-C stops both)", flush=True)
            time.sleep(2)
            continue
        if state["type"] in FINAL:
            return state["type"] == "COMPLETED"
        if (reason := gone()) is not None:
            print(f"demo: {reason} before the run ended; the run cannot go on", flush=True)
            return False
        time.sleep(0.5)
        tick += 1


class DomainLines:
    """The line each domain run logs as it ends (with its seconds, as ``socbench issp`` prints it), or the
    state of one that ended without completing; each said once."""

    def __init__(self, url: str, parent: str) -> None:
        self.url, self.parent = url, parent
        self.said: set[str] = set()  # domain runs whose line was printed
        self.ended: set[str] = set()  # domain runs whose unfinished end was printed

    def new(self) -> list[str]:
        from socbench.progress import finished_line  # here, not at the top: it imports scikit-learn (2 s)

        mine = {"flow_runs": {"parent_flow_run_id": {"any_": [self.parent]}}}
        children = api(self.url, "/flow_runs/filter", mine)
        waiting = {c["id"]: c for c in children if c["id"] not in self.said and c["start_time"]}
        info = {"logs": {"flow_run_id": {"any_": list(waiting)}, "level": {"ge_": 20}}, "limit": 200}
        logs = api(self.url, "/logs/filter", {**info, "sort": "TIMESTAMP_ASC"}) if waiting else []
        lines = []
        for log in logs:
            child = waiting.get(log["flow_run_id"])
            if child and log["message"].startswith(f"domain {child['parameters'].get('domain_id')} "):
                took = datetime.fromisoformat(log["timestamp"]) - datetime.fromisoformat(child["start_time"])
                lines.append(finished_line(log["message"], took.total_seconds()))
                self.said.add(waiting.pop(child["id"])["id"])
        for child in children:
            state = child["state"]
            if state["type"] in FINAL and state["type"] != "COMPLETED" and child["id"] not in self.ended:
                self.ended.add(child["id"])
                lines.append(f"demo: {child['name']} {state['name']}: {state.get('message') or 'no message'}")
        return lines


def summary_table(url: str, run_id: str) -> list[str]:
    """The run's table for a terminal, from the ``issp-summary`` artifact the run published."""
    from socbench.progress import run_table

    try:
        found = api(url, "/artifacts/filter", {"artifacts": {"key": {"any_": ["issp-summary"]},
                                                             "flow_run_id": {"any_": [run_id]}},
                                               "sort": "CREATED_DESC", "limit": 1})
    except SILENT as exc:
        print(f"demo: the run's table could not be read ({type(exc).__name__}: {exc})", flush=True)
        return []
    if not found:
        return []
    rows = found[0]["data"]
    return run_table(json.loads(rows) if isinstance(rows, str) else rows)


def main() -> int:
    sigint_raises()
    (STATE / "tmp").mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = demo_env(port)
    started = time.monotonic()
    with ExitStack() as stack:
        convert_model(stack, env)
        env.update(database(stack, STATE))
        print(f"demo: starting Prefect server on 127.0.0.1:{port} (state in {STATE})", flush=True)
        server = stack.enter_context(PrefectServer(env, port, STATE / "server.log"))
        print(f"demo: deploying prefect.yaml (work pool {POOL})", flush=True)
        if not pool_exists(env["PREFECT_API_URL"]):  # made by an earlier demo in this state folder
            prefect(["work-pool", "create", POOL, "--type", "process"], env)
        prefect(["--no-prompt", "deploy", "--all"], env)
        run = create_run(env["PREFECT_API_URL"], "issp/all-domains")
        # started once the run exists, so its first poll takes it: no polling every second (each poll
        # is two writes of the server's); one run at a time. Stopped before the server (ExitStack
        # unwinds in reverse): a flow-run process still exiting when the server goes away hangs.
        print("demo: starting a process worker", flush=True)
        worker = start(stack, [*PREFECT, "worker", "start", "--pool", POOL, "--work-queue", QUEUE,
                               "--limit", "1"], env, STATE / "worker.log")
        def gone() -> str | None:  # a process the run needs that has exited
            for name, proc in (("server", server.proc), ("worker", worker)):
                if proc is None or proc.poll() is not None:
                    return f"the {name} exited (log: {STATE / name}.log)"
            return None

        completed = watch(env["PREFECT_API_URL"], run, "issp/all-domains", gone)
        table = summary_table(env["PREFECT_API_URL"], run["id"])
    summary = ROOT / "results" / "smollm2-135m-instruct" / "summary.md"
    if table:
        print("\n" + "\n".join(table) + "\n")
    outcome = "completed" if completed else "FAILED"
    print(f"demo: finished in {time.monotonic() - started:.0f} s; the run {outcome}")
    print(f"demo: results in {summary.parent} (every column: {summary.name})")
    print(f"demo: report (leaderboard, plots, HTML) in {ROOT / 'results' / 'report' / 'report.html'}")
    print("demo: `make ui` serves this run, its artifacts and the Retry button in the Prefect UI")
    return 0 if completed else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started has been stopped", file=sys.stderr)
        sys.exit(130)
