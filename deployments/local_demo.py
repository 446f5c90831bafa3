"""`make demo`: a local Prefect server + process worker, deploy, run `issp/all-domains`.

Everything it starts lives under the project (`.prefect-demo/`) and is stopped on exit,
also on Ctrl-C. Prints the summary table and where the report is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from socbench.processes import PrefectServer, cpu_defaults, free_port, start_group, stop_group

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


def api(url: str, path: str, body: dict | None = None) -> dict:
    """One call to the Prefect REST API (JSON in, JSON out); a POST when there is a body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def pool_exists(url: str) -> bool:
    try:
        api(url, f"/work_pools/{POOL}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def run_and_watch(url: str, deployment: str) -> bool:
    """Create a run of ``deployment`` and follow it (a line per state); True if it completed.

    Over the REST API rather than ``prefect deployment run --watch``: no second Prefect import
    (~2 s here) at the start, and the end is seen within half a second."""
    flow, name = deployment.split("/")
    run = api(url, f"/deployments/{api(url, f'/deployments/name/{flow}/{name}')['id']}/create_flow_run", {})
    page = f"{url.removesuffix('/api')}/runs/flow-run/{run['id']}"
    print(f"demo: flow run '{run['name']}' of {deployment}: {page}", flush=True)
    seen = None
    while True:
        state = api(url, f"/flow_runs/{run['id']}")["state"]
        if state["name"] != seen:
            seen = state["name"]
            print(f"demo: {deployment}: {seen}", flush=True)
        if state["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return state["type"] == "COMPLETED"
        time.sleep(0.5)


def main() -> int:
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
        # in reverse): see stack-notes
        start(stack, [str(BIN / "prefect"), "worker", "start", "--pool", POOL], env, STATE / "worker.log")
        prefect(["--no-prompt", "deploy", "--all"], env)
        completed = run_and_watch(env["PREFECT_API_URL"], "issp/all-domains")
    summary = ROOT / "results" / "smollm2-135m-instruct" / "summary.md"
    if summary.exists():
        print("\n" + summary.read_text())
    outcome = "completed" if completed else "FAILED"
    print(f"demo: finished in {time.monotonic() - started:.0f} s; the run {outcome}")
    print(f"demo: results in {summary.parent}")
    print(f"demo: report (leaderboard, plots, HTML) in {ROOT / 'results' / 'report' / 'report.html'}")
    print("demo: `make ui` serves this run, its artifacts and the Retry button in the Prefect UI")
    return 0 if completed else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started has been stopped", file=sys.stderr)
        sys.exit(130)
