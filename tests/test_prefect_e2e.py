"""End to end on a real Prefect server and process worker, deployed from prefect.yaml.

Of three domains, the middle one's data file is broken: the others complete and the parent ends Failed.
After the file is fixed, retrying the parent reruns only that domain, and no request that
had been answered is sent to the engine again. The engine is vLLM's own OpenAI server on the tiny model
and the Prefect server the sweep's (``workers_server``): this module is in the sweep's group of modules
(tests/support/workers.py), which starts both once. (In-process vLLM cost ~40 CPU s in each of the two
flow-run processes; it is tested in the tests' process: test_engine_vllm, the engine pool.)
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from socbench.models import model_slug
from socbench.processes import prefect_rest, start_group, stop_group, wait_for
from tests.conftest import prefect_cli as _prefect

pytestmark = pytest.mark.slow
PREFECT = [sys.executable, "-m", "prefect"]  # not the venv's script: its shebang may name another python
ROOT = Path(__file__).resolve().parents[1]
BROKEN = "socialnetworks"  # domain 10, between 9 and 11 (--start_domain_id 9)
NAME = "deploy-fail-retry"  # the deployment run's name (the server is shared with test_sweep_e2e)


def _flow_runs(env: dict, attempts: int = 5) -> list[dict]:
    """All flow runs; the local SQLite server can stall for many seconds under load (stack-notes)."""
    req = urllib.request.Request(f"{env['PREFECT_API_URL']}/flow_runs/filter", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.loads(resp.read())
        except (TimeoutError, OSError):
            if attempt == attempts - 1:
                raise
            time.sleep(2)
    return []


def _children(env: dict, run_id: str) -> list[dict]:
    """The domain runs inside the run ``run_id`` (every attempt's)."""
    return prefect_rest(env["PREFECT_API_URL"], "/flow_runs/filter",
                       {"flow_runs": {"parent_flow_run_id": {"any_": [run_id]}}})


def _stored_requests(cache_dir: Path) -> int:
    files = list(cache_dir.glob("engine-cache.sqlite"))
    assert files, f"no engine cache in {cache_dir}"
    with closing(sqlite3.connect(files[0])) as db:  # see test_reliability.cached_rows
        return db.execute("select count(*) from results").fetchone()[0]


def test_deploy_run_fail_retry(workers_server: dict, tiny_server, tmp_path: Path, demo_data: Path) -> None:
    env = {**workers_server, "OPENAI_API_KEY": "unused"}
    data = tmp_path / "Dataset_all"
    shutil.copytree(demo_data, data)
    answers = data / "A_GroundTruth_sampling500" / f"issp_answer_{BROKEN}.json"
    good = answers.read_text()
    answers.write_text(good[: len(good) // 2])  # truncated JSON
    out = tmp_path / "results"

    worker_log = tmp_path / "worker.log"
    # the default queue only: the sweep's controller queue (test_sweep_e2e, same server) is not this test's
    command = [*PREFECT, "worker", "start", "--pool", "socbench-local", "--work-queue", "default"]
    worker = start_group(command, env, worker_log, cwd=tmp_path)
    try:
        config = {"domain_id": "all", "start_domain_id": 9, "interview_count": 4, "data_dir": str(data),
                  "output_dir": str(out), "structured": True,
                  "engine": {"api_type": "openai", "model": "tiny", "api_base": f"{tiny_server.url}/v1"}}
        params = ["--param", f"config={json.dumps(config)}", "--flow-run-name", NAME]
        run = _prefect(env, "deployment", "run", "issp/all-domains", *params, "--watch", check=False)
        assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]

        parent = next(r for r in _flow_runs(env) if r["name"] == NAME)
        children = _children(env, parent["id"])
        states = {r["name"]: r["state_type"] for r in children}
        assert states.pop("issp-domain-10") == "FAILED"
        seen = sorted((r["name"], r["state_type"], r["flow_id"]) for r in children)
        assert len(states) == 2 and set(states.values()) == {"COMPLETED"}, seen
        model_dir = out / model_slug("tiny")
        assert (model_dir / "WorkOrientations_metrics.json").exists()
        assert not (model_dir / "SocialNetworks_metrics.json").exists()
        stored_before, sent_before = _stored_requests(out / ".cache"), tiny_server.requests()

        answers.write_text(good)  # fix the file, then retry the parent as the UI's Retry does
        # stack-notes: retrying before the worker reports the old process's exit gets overwritten
        exited = f"Process for flow run '{parent['name']}' exited"
        wait_for(lambda: exited in worker_log.read_text(), 120, "the worker to see the flow-run process exit")
        _prefect(env, "flow-run", "retry", parent["id"])

        def finished() -> dict | None:
            current = next(r for r in _flow_runs(env) if r["id"] == parent["id"])
            done = (current["run_count"] > parent["run_count"]
                    and current["state_type"] in ("COMPLETED", "FAILED", "CRASHED"))
            return current if done else None

        final = wait_for(finished, 480, "the retried parent run to finish", interval_s=1.0)
        assert final["state_type"] == "COMPLETED", final["state"]
        reruns = _children(env, parent["id"])
        assert sorted(r["name"] for r in reruns).count("issp-domain-10") == 2
        assert len(reruns) == 4, sorted(r["name"] for r in reruns)  # only the fixed domain ran again
        fixed = json.loads((model_dir / "SocialNetworks_metrics.json").read_text())
        stored_after = _stored_requests(out / ".cache")
        assert stored_after - stored_before == fixed["total_count"]  # nothing else was generated again ...
        assert tiny_server.requests() - sent_before == fixed["total_count"]  # ... nor sent
        summary = json.loads((model_dir / "summary.json").read_text())
        assert len(summary["domains"]) == 3
    finally:
        stop_group(worker, grace_s=30)
