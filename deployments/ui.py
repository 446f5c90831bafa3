"""`make ui`: serve the demo's Prefect state (`.prefect-demo/`) on 127.0.0.1 and print the URL.

`make demo` stops its server when the run ends; this starts a Prefect server on the same
state, so the `issp` run, its domain runs, the summary and leaderboard artifacts and the
Retry button are there to look at; "latest issp run" links the run that finished last. Nothing
runs flows (start `make demo` again for that); Ctrl-C (or SIGTERM) stops the server and
everything in its process group within seconds.

    .venv/bin/python deployments/ui.py [--state .prefect-demo] [--port 4200]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from local_demo import FINAL, STATE, demo_env
from local_demo import api as call

from socbench.processes import Postgres, PrefectServer, free_port, sigint_raises


def latest_run(api: str) -> dict | None:
    """The ``issp`` run that finished last, or None: not the Scheduled nightly run, nor one still running."""
    ended = {"state": {"type": {"any_": list(FINAL)}}, "end_time": {"is_null_": False}}
    runs = call(api, "/flow_runs/filter", {"flows": {"name": {"any_": ["issp"]}}, "flow_runs": ended,
                                          "sort": "END_TIME_DESC", "limit": 1})
    return runs[0] if runs else None


STOP_GRACE_S = 3.0  # then the server's group is killed: it runs no flows; the database keeps its last commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, default=STATE, help="the demo's Prefect state folder")
    parser.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    postgres, sqlite = args.state / "postgres", args.state / "home" / "prefect.db"
    if not (postgres / Postgres.READY).is_file() and not sqlite.is_file():
        print(f"ui: no Prefect state in {args.state} (no {postgres} or {sqlite}): run `make demo` first",
              file=sys.stderr)
        return 2
    port = args.port or free_port()
    env = demo_env(port, args.state)
    (args.state / "tmp").mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # KeyboardInterrupt: the server stops
    sigint_raises()
    with ExitStack() as stack:
        try:  # Ctrl-C while the server starts stops it too
            if (postgres / Postgres.READY).is_file():  # the demo's cluster (deployments/local_demo.py)
                cluster = stack.enter_context(Postgres(folder=postgres))
                env["PREFECT_API_DATABASE_CONNECTION_URL"] = cluster.url
            server = stack.enter_context(PrefectServer(env, port, args.state / "ui-server.log",
                                                       grace_s=STOP_GRACE_S))
            show_links(server.url, args.state)
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback; the stop is bounded
            print("ui: stopping the server", flush=True)
            return 0
    print(f"ui: the server exited (log: {args.state / 'ui-server.log'})", file=sys.stderr)
    return 1


def show_links(url: str, state: Path) -> None:
    """The UI's address, the run that finished last and the artifacts page."""
    print(f"ui: Prefect UI at {url} (state in {state}); Ctrl-C stops it", flush=True)
    run = latest_run(f"{url}/api")
    if run is not None:
        print(f"ui: latest issp run '{run['name']}' ({run['state_name']}): {url}/runs/flow-run/{run['id']}",
              flush=True)
    print(f"ui: artifacts (summary, leaderboard, per-domain reports): {url}/artifacts", flush=True)


if __name__ == "__main__":
    sys.exit(main())
