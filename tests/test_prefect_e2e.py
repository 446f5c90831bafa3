"""End to end on a real Prefect server and process worker, deployed from prefect.yaml.

Of three domains, the middle one's data file is broken: the others complete and the parent ends Failed.
After the file is fixed, retrying the parent reruns only that domain, and no request that
had been answered is sent to the engine again.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from socbench.models import model_slug
from socbench.processes import Postgres, prefect_server, start_group, stop_group, wait_for

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
BROKEN = "socialnetworks"  # domain 10, between 9 and 11 (--start_domain_id 9)


def prefect_env(tmp_path: Path) -> dict:
    """Project-local Prefect state for a server, its workers and the ``prefect`` commands."""
    home = tmp_path / "prefect"
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_MEMO_STORE_PATH": str(home / "memo_store.toml"),
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results"),
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "SOCBENCH_PROJECT_DIR": str(ROOT),
            "TMPDIR": str(tmp_path / "tmp"),
            "PYTHONUNBUFFERED": "1"}  # the test reads the worker's log as it is written


@pytest.fixture()
def server(tmp_path: Path):
    """A real Prefect server with project-local state; yields its clients' env. On PostgreSQL where it is
    installed, as the demo's: on SQLite a loaded host's server logged 1,826 "database is locked" and the
    watched deployment run never returned (the worker, its flow-run process and the watch all write)."""
    with prefect_server(prefect_env(tmp_path), tmp_path / "server.log", postgres=Postgres.available()) as env:
        yield env


def _prefect(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=check, timeout=900)


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


def _stored_requests(cache_dir: Path) -> int:
    files = list(cache_dir.glob("engine-cache.sqlite"))
    assert files, f"no engine cache in {cache_dir}"
    with closing(sqlite3.connect(files[0])) as db:  # see test_reliability.cached_rows
        return db.execute("select count(*) from results").fetchone()[0]


def test_deploy_run_fail_retry(server: dict, tiny_model: Path, tmp_path: Path, demo_data: Path) -> None:
    env = server
    data = tmp_path / "Dataset_all"
    shutil.copytree(demo_data, data)
    answers = data / "A_GroundTruth_sampling500" / f"issp_answer_{BROKEN}.json"
    good = answers.read_text()
    answers.write_text(good[: len(good) // 2])  # truncated JSON
    out = tmp_path / "results"

    _prefect(env, "work-pool", "create", "socbench-local", "--type", "process", "--overwrite")
    _prefect(env, "--no-prompt", "deploy", "--all")
    worker_log = tmp_path / "worker.log"
    command = [str(BIN / "prefect"), "worker", "start", "--pool", "socbench-local"]
    worker = start_group(command, env, worker_log, cwd=tmp_path)
    try:
        config = {"domain_id": "all", "start_domain_id": 9, "interview_count": 4, "data_dir": str(data),
                  "output_dir": str(out), "structured": True,
                  "engine": {"api_type": "vllm", "model": str(tiny_model)}}
        params = ["--param", f"config={json.dumps(config)}"]
        run = _prefect(env, "deployment", "run", "issp/all-domains", *params, "--watch", check=False)
        assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]

        runs = _flow_runs(env)
        parent = next(r for r in runs if r["name"] and r["parent_task_run_id"] is None)
        children = [r for r in runs if r["parent_task_run_id"] is not None]
        states = {r["name"]: r["state_type"] for r in children}
        assert states.pop("issp-domain-10") == "FAILED"
        seen = sorted((r["name"], r["state_type"], r["flow_id"]) for r in children)
        assert len(states) == 2 and set(states.values()) == {"COMPLETED"}, seen
        model_dir = out / model_slug(str(tiny_model))
        assert (model_dir / "WorkOrientations_metrics.json").exists()
        assert not (model_dir / "SocialNetworks_metrics.json").exists()
        stored_before = _stored_requests(out / ".cache")

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
        reruns = [r for r in _flow_runs(env) if r["parent_task_run_id"] is not None]
        assert sorted(r["name"] for r in reruns).count("issp-domain-10") == 2
        assert len(reruns) == 4, sorted(r["name"] for r in reruns)  # only the fixed domain ran again
        fixed = json.loads((model_dir / "SocialNetworks_metrics.json").read_text())
        stored_after = _stored_requests(out / ".cache")
        assert stored_after - stored_before == fixed["total_count"]  # nothing else was generated again
        summary = json.loads((model_dir / "summary.json").read_text())
        assert len(summary["domains"]) == 3
    finally:
        stop_group(worker, grace_s=30)
