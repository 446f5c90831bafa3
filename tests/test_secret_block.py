"""An API key from a Prefect Secret block reaches the server and nothing else.

The flow runs in-process against a temporary Prefect API (prefect_test_harness); the planted
key must be sent to the server as a bearer token and appear in no result file, cache file,
flow parameter, artifact or log.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from socbench.config import make_config
from support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow  # runs a flow on a Prefect API
PLANTED = "sk-planted-7f3a9c1e5d"


def test_key_from_secret_block(api_url, demo_data: Path, tmp_path: Path,
                               caplog: pytest.LogCaptureFixture) -> None:
    from prefect.blocks.system import Secret
    from prefect.client.orchestration import get_client

    from socbench.flows.issp import issp

    Secret(value=PLANTED).save("socbench-test-key", overwrite=True)
    out = tmp_path / "out"
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer() as server:
        config = make_config(domain_id=1, interview_count=3, api_type="config", api_base=server.url,
                             model="fake-model", data_dir=str(demo_data), output_dir=str(out))
        state = issp(config, api_key_secret="socbench-test-key", return_state=True)
        assert state.is_completed(), state.message
        stats = server.stats()
        assert stats.requests > 0 and stats.with_auth == stats.requests

    for path in out.rglob("*"):
        if path.is_file():
            assert PLANTED.encode() not in path.read_bytes(), path
    assert PLANTED not in caplog.text
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
        assert PLANTED not in str(run.parameters)
        artifacts = client.read_artifacts()
        assert artifacts and all(PLANTED not in str(a.data) for a in artifacts)
