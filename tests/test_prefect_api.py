"""socbench's own Prefect API (``cli.prefect_api``): started early, stands in for Prefect's own.

Issue 15: the CLI spawns the API's server before its heavy imports and no longer imports
Prefect's server modules itself (1.7 s); Prefect code that would start a temporary server of
its own must still get socbench's, whenever it first imports ``prefect.server.api.server``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # starts a Prefect API server in a subprocess

CHILD = """
import sys
from cli.prefect_spawn import spawn_early
from cli.prefect_api import prefect_api
from prefect import flow

@flow
def one() -> int:
    return 1

port = spawn_early()
with prefect_api(port=port) as url:
    assert url == f"http://127.0.0.1:{port}/api", url
    assert "prefect.server.api.server" not in sys.modules
    from prefect.server.api.server import SubprocessASGIServer
    assert SubprocessASGIServer().api_url == url  # Prefect's own start gets socbench's server
    assert one() == 1
    from prefect.settings import get_current_settings
    assert get_current_settings().flows.heartbeat_frequency is None
assert SubprocessASGIServer._instances.get(None) is None
print("ok")
"""


def test_early_server_stands_in_for_prefects_own_and_is_gone_after(tmp_path):
    home = tmp_path / "prefect"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_HOME=str(home), PREFECT_MEMO_STORE_PATH=str(home / "memo.toml"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
