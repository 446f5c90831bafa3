"""`make demo`: a local Prefect server + process worker, deploy, run `issp/all-domains`.

Everything it starts lives under the project (`.prefect-demo/`) and is stopped on exit,
also on Ctrl-C. Prints the summary table and where the report is.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".prefect-demo"
BIN = Path(sys.executable).parent
POOL = "socbench-local"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_env(port: int, state: Path = STATE) -> dict[str, str]:
    """Project-local Prefect state, the engine's CPU settings, and the project dir for pull steps."""
    env = dict(os.environ)
    env.update({
        "PREFECT_HOME": str(state / "home"),
        "PREFECT_MEMO_STORE_PATH": str(state / "home" / "memo_store.toml"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(state / "home" / "results"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        "PREFECT_LOGGING_EXTRA_LOGGERS": "socbench",
        "SOCBENCH_PROJECT_DIR": str(ROOT),
        "TMPDIR": str(state / "tmp"),
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    })
    env.setdefault("SOCBENCH_HOME", str(ROOT / ".socbench"))
    for key, value in {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
                       "TORCH_COMPILE_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        env.setdefault(key, value)
    return env


def wait_healthy(url: str, timeout_s: float = 120.0, log: Path = STATE / "server.log") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"demo: Prefect server at {url} not healthy after {timeout_s:.0f} s "
                     f"(log: {log})")


def start(stack: ExitStack, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a background process in its own group; stopped (TERM, then KILL) on exit."""
    handle = log.open("w")
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def stop() -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        handle.close()

    stack.callback(stop)
    return proc


def prefect(args: list[str], env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=ROOT, check=check)


def main() -> int:
    (STATE / "tmp").mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = demo_env(port)
    started = time.monotonic()
    with ExitStack() as stack:
        print(f"demo: starting Prefect server on 127.0.0.1:{port} (state in {STATE})", flush=True)
        start(stack, [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
              env, STATE / "server.log")
        wait_healthy(env["PREFECT_API_URL"])
        prefect(["work-pool", "create", POOL, "--type", "process", "--overwrite"], env)
        print("demo: starting a process worker", flush=True)
        # it starts up while the deployments are made; stopped before the server (ExitStack unwinds
        # in reverse): see stack-notes
        start(stack, [str(BIN / "prefect"), "worker", "start", "--pool", POOL], env, STATE / "worker.log")
        prefect(["--no-prompt", "deploy", "--all"], env)
        run = prefect(["deployment", "run", "issp/all-domains", "--watch"], env, check=False)
    summary = ROOT / "results" / "smollm2-135m-instruct" / "summary.md"
    if summary.exists():
        print("\n" + summary.read_text())
    print(f"demo: finished in {time.monotonic() - started:.0f} s; flow run exit code {run.returncode}")
    print(f"demo: results in {summary.parent}")
    print(f"demo: report (leaderboard, plots, HTML) in {ROOT / 'results' / 'report' / 'report.html'}")
    print("demo: `make ui` serves this run, its artifacts and the Retry button in the Prefect UI")
    return run.returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started has been stopped", file=sys.stderr)
        sys.exit(130)
