"""`make ui`: serve the demo's Prefect state (`.prefect-demo/`) on 127.0.0.1 and print the URL.

`make demo` stops its server when the run ends; this starts a Prefect server on the same
state, so the `issp` run, its domain runs, the summary and leaderboard artifacts and the
Retry button are there to look at. Nothing runs flows (start `make demo` again for that);
Ctrl-C (or SIGTERM) stops the server.

    .venv/bin/python deployments/ui.py [--state .prefect-demo] [--port 4200]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from local_demo import STATE, demo_env
from local_demo import api as call

from socbench.processes import PrefectServer, free_port


def latest_run(api: str, flow: str = "issp") -> dict | None:
    """The newest run of ``flow`` in the served state, or None."""
    runs = call(api, "/flow_runs/filter", {"flows": {"name": {"any_": [flow]}}, "sort": "START_TIME_DESC",
                                          "limit": 1})
    return runs[0] if runs else None


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds the ExitStack: the server is stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, default=STATE, help="the demo's Prefect state folder")
    parser.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    home = args.state / "home"
    if not (home / "prefect.db").is_file():
        print(f"ui: no Prefect state in {args.state} (no {home / 'prefect.db'}): run `make demo` first",
              file=sys.stderr)
        return 2
    port = args.port or free_port()
    env = demo_env(port, args.state)
    (args.state / "tmp").mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop)
    with ExitStack() as stack:
        server = stack.enter_context(PrefectServer(env, port, args.state / "ui-server.log"))
        url = f"http://127.0.0.1:{port}"
        print(f"ui: Prefect UI at {url} (state in {args.state}); Ctrl-C stops it", flush=True)
        run = latest_run(env["PREFECT_API_URL"])
        if run is not None:
            print(f"ui: latest issp run '{run['name']}' ({run['state_name']}): "
                  f"{url}/runs/flow-run/{run['id']}", flush=True)
        print(f"ui: artifacts (summary, leaderboard, per-domain reports): {url}/artifacts", flush=True)
        try:
            while server.proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("ui: stopping the server", flush=True)
            return 0
    print(f"ui: the server exited (log: {args.state / 'ui-server.log'})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
