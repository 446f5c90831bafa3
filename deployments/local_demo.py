"""`make demo`: a local Prefect server + process worker, deploy, run `issp/all-domains`.

Everything it starts lives under the project (`.prefect-demo/`) and is stopped on exit,
also on Ctrl-C. Prints a line per domain as it finishes (the one `socbench issp` prints), the
run's table and where the summary and the report are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

from socbench.processes import PrefectServer, cpu_defaults, free_port, interruptible, start_group, stop_group
from socbench.processes import prefect_api as api

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".prefect-demo"
BIN = Path(sys.executable).parent
POOL = "socbench-local"


def demo_env(port: int, state: Path = STATE) -> dict[str, str]:
    """Project-local Prefect state, the engine's CPU settings, and the project dir for pull steps."""
    env = dict(os.environ)
    env.update({
        "PREFECT_HOME": str(state / "home"),
        "PREFECT_MEMO_STORE_PATH": str(state / "home" / "memo_store.toml"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(state / "home" / "results"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_LOGGING_EXTRA_LOGGERS": "socbench",
        "SOCBENCH_PROJECT_DIR": str(ROOT),
        "TMPDIR": str(state / "tmp"),
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    })
    env.setdefault("SOCBENCH_HOME", str(ROOT / ".socbench"))
    cpu_defaults(env)
    return env


def start(stack: ExitStack, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a background process in its own group; stopped (TERM, then KILL) on exit."""
    proc = start_group(args, env, log, cwd=ROOT)
    stack.callback(stop_group, proc)
    return proc


def prefect(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=ROOT, check=True)


def pool_exists(url: str) -> bool:
    try:
        api(url, f"/work_pools/{POOL}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def run_and_watch(url: str, deployment: str) -> tuple[str, bool]:
    """Create a run of ``deployment`` and follow it: a line per state, and per domain the line
    ``socbench issp`` prints as it finishes; (the run's id, whether it completed).

    Over the REST API rather than ``prefect deployment run --watch``: no second Prefect import
    (~2 s here) at the start, and the end is seen within half a second."""
    flow, name = deployment.split("/")
    run = api(url, f"/deployments/{api(url, f'/deployments/name/{flow}/{name}')['id']}/create_flow_run", {})
    page = f"{url.removesuffix('/api')}/runs/flow-run/{run['id']}"
    print(f"demo: flow run '{run['name']}' of {deployment}: {page}", flush=True)
    seen, domains, tick = None, DomainLines(url, run["id"]), 0
    while True:
        state = api(url, f"/flow_runs/{run['id']}")["state"]
        if state["name"] != seen:
            seen = state["name"]
            print(f"demo: {deployment}: {seen}", flush=True)
        if tick % 4 == 0 or state["type"] in FINAL:  # domains take minutes: every 2 s is soon enough
            for line in domains.new():
                print(line, flush=True)
        if state["type"] in FINAL:
            return run["id"], state["type"] == "COMPLETED"
        time.sleep(0.5)
        tick += 1


class DomainLines:
    """What the domain runs of a run say as they end: the line each logs (``socbench.progress.
    domain_line``) with its seconds, as ``socbench issp`` prints it, and the state of one that
    ended without completing; each said once."""

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

    found = api(url, "/artifacts/filter", {"artifacts": {"key": {"any_": ["issp-summary"]},
                                                         "flow_run_id": {"any_": [run_id]}},
                                           "sort": "CREATED_DESC", "limit": 1})
    if not found:
        return []
    rows = found[0]["data"]
    return run_table(json.loads(rows) if isinstance(rows, str) else rows)


def main() -> int:
    interruptible()
    (STATE / "tmp").mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = demo_env(port)
    started = time.monotonic()
    with ExitStack() as stack:
        print(f"demo: starting Prefect server on 127.0.0.1:{port} (state in {STATE})", flush=True)
        stack.enter_context(PrefectServer(env, port, STATE / "server.log"))
        if not pool_exists(env["PREFECT_API_URL"]):  # made by an earlier demo in this state folder
            prefect(["work-pool", "create", POOL, "--type", "process"], env)
        print("demo: starting a process worker", flush=True)
        # it starts up while the deployments are made; stopped before the server (ExitStack unwinds
        # in reverse): a flow-run process still exiting when the server goes away hangs
        start(stack, [str(BIN / "prefect"), "worker", "start", "--pool", POOL], env, STATE / "worker.log")
        prefect(["--no-prompt", "deploy", "--all"], env)
        run_id, completed = run_and_watch(env["PREFECT_API_URL"], "issp/all-domains")
        table = summary_table(env["PREFECT_API_URL"], run_id)
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
