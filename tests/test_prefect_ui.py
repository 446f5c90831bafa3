"""`make ui` (deployments/ui.py): the demo's Prefect state served after the run, seen in a browser.

A small state is seeded the way the demo fills `.prefect-demo/`: an `issp` run over two domains
on the tiny model (transformers backend: no engine start-up to wait for). `ui.py` serves that
state on 127.0.0.1 and prints the URLs; Debian's chromium (headless, driven through chromium-driver)
renders the Prefect UI: the `issp` run, its domain runs and the summary and leaderboard artifacts
must appear on its pages (each waited for: the single-page app fetches them after loading).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import CLI
from support.browser import browser, needs_browser
from support.processes import user_prefect_home

pytestmark = [pytest.mark.slow, needs_browser]  # runs the CLI, a Prefect server and chromium
ROOT = Path(__file__).resolve().parents[1]


def _seed(state: Path, model: Path, out: Path, database: Path | None) -> None:
    """The demo's run on ``state``, its database a copy of the session API's where there is one
    (``prefect_db``): the run's server starts without migrating a fresh one (11 CPU s, not 21)."""
    env = {**os.environ, **user_prefect_home(state / "home", database)}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run([*CLI, "issp", "--api_type", "hf", "--model", str(model),
                           "--domain_id", "all", "--start_domain_id", "10", "--interview_count", "2",
                           "--output_dir", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def test_ui_serves_the_demo_state(tiny_model: Path, tmp_path: Path, prefect_db: Path | None) -> None:
    state = tmp_path / "prefect-demo"
    missing = subprocess.run([sys.executable, str(ROOT / "deployments" / "ui.py"), "--state", str(state)],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "run `make demo` first" in missing.stderr
    _seed(state, tiny_model, tmp_path / "results", prefect_db)
    log = (tmp_path / "ui.out").open("w+")
    ui = subprocess.Popen([sys.executable, str(ROOT / "deployments" / "ui.py"), "--state", str(state)],
                          stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while "ui: artifacts" not in (text := (tmp_path / "ui.out").read_text()) \
                and time.monotonic() < deadline:
            assert ui.poll() is None, text
            time.sleep(0.5)
        base = re.search(r"Prefect UI at (http://127\.0\.0\.1:\d+)", text).group(1)
        run = re.search(r"latest issp run '([\w-]+)' \(Completed\): (\S+)", text)
        assert run is not None, text
        with browser(tmp_path / "chromium") as chromium:  # each open() fails with the page's text
            chromium.open(f"{base}/runs", f"issp {run.group(1)}", "Completed",
                          "issp-domain issp-domain-10", "issp-domain issp-domain-11")
            chromium.open(run.group(2), run.group(1))  # the printed link opens the run
            chromium.open(f"{base}/artifacts", "issp-summary", "issp-leaderboard", "issp-report-domain-10")
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=60)
        log.close()
    assert "ui: stopping the server" in (tmp_path / "ui.out").read_text()
