"""The model sweep on a real Prefect server, work pools and process workers, deployed from prefect.yaml.

Two models (vLLM's own OpenAI server serving the tiny model under two names) over six demo domains,
cut into runs of three. The first model's runs go to two workers that take them at once; one worker
is killed mid-sweep: only its domains fail, the sweep ends Failed naming them, and Retry completes
them on the other worker without sending any answered request again. The second model's runs go to a
second pool standing in for the GPU pool (deployments/gpu.yaml), whose two workers share one host with
an engine limit of one engine: its runs land there, overlap, and hold the engine in turn. The numbers
equal two single-process runs. (One sweep for both: the GPU pool's own sweep cost ~50 CPU s.)
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from test_prefect_e2e import PREFECT, ROOT, _flow_runs, _prefect

from socbench.engines.cache import HEADER, SEGMENTS_DIR
from socbench.errors import ConfigError
from socbench.models import model_slug
from socbench.processes import (
    Postgres,
    prefect_rest,
    signal_group,
    start_group,
    stop_group,
    wait_for,
)
from tests.conftest import on_api
from tests.test_sweep import sweep

pytestmark = pytest.mark.slow
FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
DOMAINS = (6, 7, 8, 9, 10, 11)  # --start_domain_id 6: runs of three, so a run can be caught half-way


@pytest.fixture()
def server(workers_server: dict):
    """The session's Prefect server for real workers (conftest.workers_server, test_prefect_e2e's too), on
    a throwaway PostgreSQL, as docs/scale-out.md asks once several workers poll it (SQLite froze every
    API call for 60 s under three); its clients' environment. The tests find their runs by name."""
    if not Postgres.available():
        pytest.skip("PostgreSQL not found (make setup installs Debian's postgresql)")
    return workers_server


@pytest.fixture()
def api_url(server: dict):
    """The in-process flows (the single-process reference runs, tests/test_sweep.py's) on the same server."""
    yield from on_api(server["PREFECT_API_URL"])


def _worker(env: dict, folder: Path, name: str, *options: str, pool: str = "socbench-local",
            extra_env: dict | None = None) -> tuple[subprocess.Popen, Path]:
    """A process worker in its own process group (killing the group kills its flow runs too)."""
    log = folder / f"{name}.log"
    command = [*PREFECT, "worker", "start", "--pool", pool, "--name", name, *options]
    return start_group(command, {**env, **(extra_env or {})}, log, cwd=folder), log


def _post(env: dict, path: str, body: dict) -> list[dict]:
    return prefect_rest(env["PREFECT_API_URL"], path, body)


def _children(env: dict, run_id: str) -> list[dict]:
    return _post(env, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [run_id]}}})


def _sweep(env: dict, name: str) -> dict | None:
    return next((r for r in _flow_runs(env) if r["name"] == name), None)


def _batches(env: dict, parent: str) -> list[dict]:
    """The runs the sweep named ``parent`` dispatched, each with the domain runs inside it."""
    sweep = _sweep(env, parent)
    runs = _children(env, sweep["id"]) if sweep else []  # none before the deployment run exists
    for run in runs:
        run["domains"] = {c["parameters"]["domain_id"]: c["state_type"] for c in _children(env, run["id"])}
    return runs


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _overlap(a: dict, b: dict) -> bool:
    return _time(a["start_time"]) < _time(b["end_time"]) and _time(b["start_time"]) < _time(a["end_time"])


def _cache_lines(cache_dir: Path) -> tuple[int, int]:
    """(answer lines, distinct answers) over every segment: a re-sent answered request shows as a
    second line with the same key."""
    keys = [line.split("\t", 1)[0] for seg in (cache_dir / SEGMENTS_DIR).glob("*/*.seg")
            for line in seg.read_text().splitlines() if line and line != HEADER]
    return len(keys), len(set(keys))


def _metrics(folder: Path) -> dict[str, tuple]:
    fields = ("accuracy", "macro_f1", "correct_count", "total_count", "parse_failures", "engine_errors")
    return {p.name: tuple(json.loads(p.read_text()).get(f) for f in fields)
            for p in sorted(folder.glob("*_metrics.json"))}


def _run_sweep(env: dict, name: str, config: dict) -> subprocess.Popen:
    return subprocess.Popen([*PREFECT, "deployment", "run", "issp-sweep/nightly", "--param",
                             f"config={json.dumps(config)}", "--flow-run-name", name, "--watch"], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _single_process_runs(runs: dict, models: list[dict], out: Path) -> None:
    """Each model through the single-process ``issp`` flow (one engine for every domain), in this process."""
    from socbench.config import RunConfig
    from socbench.flows.issp import issp

    for engine in models:  # its engine record: where the sweep runs it is not the engine's
        engine = {**engine, "api_base": ",".join(engine["api_base"])}
        engine = {k: v for k, v in engine.items() if k not in ("deployment", "engine_slots")}
        config = RunConfig.model_validate({**runs, "output_dir": str(out), "engine": engine})
        state = issp(config, return_state=True)
        assert state.is_completed(), state.message


def _kill_mid_run(env: dict, worker: subprocess.Popen) -> dict:
    """Wait until worker-a is inside a run with some domains done and some not, then SIGKILL its
    process group: the worker and the run's process die together, as with a lost host."""
    def a_mid_run() -> dict | None:
        for batch in _batches(env, "sweep-main"):
            done = sum(s == "COMPLETED" for s in batch["domains"].values())
            if (batch["labels"].get("prefect.worker.name") == "worker-a" and batch["state_type"] == "RUNNING"
                    and 0 < done < len(batch["parameters"]["domain_ids"])):
                return batch
        return None

    killed = wait_for(a_mid_run, 300, "worker-a to be half-way through a run", interval_s=0.3)
    signal_group(worker, signal.SIGKILL)
    return killed


def _only_its_domains_failed(env: dict, killed: dict) -> tuple[dict, list[dict], list[int]]:
    """The sweep ended Failed naming exactly the killed run's unfinished domains; all else completed."""
    parent, batches = _sweep(env, "sweep-main"), _batches(env, "sweep-main")
    lost = next(b for b in batches if b["id"] == killed["id"])
    assert parent["state_type"] == "FAILED" and lost["state_type"] == "CRASHED"  # by the zombie automation
    failed = sorted(d for d in killed["parameters"]["domain_ids"] if lost["domains"].get(d) != "COMPLETED")
    model, message = killed["parameters"]["config"]["engine"]["model"], parent["state"]["message"]
    assert all(f"{model}: " in message and f"({d})" in message for d in failed), message
    assert message.count("Crashed") == len(failed)
    assert all(b["state_type"] == "COMPLETED" for b in batches if b["id"] != killed["id"])
    return parent, batches, failed


def _retry(env: dict, parent: dict, controller_log: Path) -> None:
    """``prefect flow-run retry`` on the sweep (the UI's Retry) once its process has exited (stack-notes)."""
    exited = f"Process for flow run '{parent['name']}' exited"
    wait_for(lambda: exited in controller_log.read_text(), 120, "the controller to see its process exit")
    _prefect(env, "flow-run", "retry", parent["id"])

    def retried() -> dict | None:
        run = _sweep(env, parent["name"])
        return run if run["run_count"] > parent["run_count"] and run["state_type"] in FINAL else None

    final = wait_for(retried, 480, "the retried sweep", interval_s=1.0)
    assert final["state_type"] == "COMPLETED", final["state"]


def _same_as_single_process(models: list[dict], out: Path, single: Path) -> int:
    """Each model's domain metrics equal the single-process run's; the leaderboard holds both
    models x every domain. Returns the number of prompts answered."""
    total = 0
    for engine in models:
        folder = model_slug(engine["model"])
        ours, theirs = _metrics(out / folder), _metrics(single / folder)
        assert len(ours) == len(DOMAINS) and ours == theirs
        total += sum(m[3] for m in ours.values())
    with (out / "report" / "leaderboard.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    expected = [(m["model"], str(d)) for m in models for d in DOMAINS]
    assert sorted((r["model"], r["domain_id"]) for r in rows if r["domain_id"]) == sorted(expected)
    return total


def _engine_holds(env: dict) -> list[tuple[datetime, datetime]]:
    """(acquired, released) of every engine-limit lease, from the events the runs emitted."""
    names = ["prefect.concurrency-limit.acquired", "prefect.concurrency-limit.released"]
    events = _post(env, "/events/filter", {"filter": {"event": {"name": names}}, "limit": 50})["events"]
    acquired = {e["id"]: _time(e["occurred"]) for e in events if e["event"].endswith(".acquired")}
    return sorted((acquired[e["follows"]], _time(e["occurred"])) for e in events
                  if e["event"].endswith(".released") and e.get("follows") in acquired)


def _gpu_pool_one_engine_per_host(env: dict, batches: list[dict]) -> None:
    """The second model's runs landed in the pool standing in for socbench-gpu, one on each of its two
    workers on one host whose engine limit is 1: they overlap, and hold the engine one after the other."""
    gpu = [b for b in batches if b["work_pool_name"] == "socbench-gpu"]
    assert len(gpu) == 2 and {b["parameters"]["config"]["engine"]["model"] for b in gpu} == {"tiny-b"}
    assert all(b["work_pool_name"] == "socbench-local" for b in batches if b not in gpu)
    assert {b["labels"]["prefect.worker.name"] for b in gpu} == {"gpu-1", "gpu-2"}
    assert _overlap(*gpu)  # both workers ran at once ...
    holds = wait_for(lambda: len(_engine_holds(env)) == 2 and _engine_holds(env), 60, "engine-limit events")
    assert holds[0][1] <= holds[1][0] + timedelta(seconds=0.5)  # ... their engines one after the other


def _start_workers(env: dict, folder: Path) -> dict[str, subprocess.Popen]:
    """Two workers of the local pool, and two of the GPU pool on one host."""
    workers = {name: _worker(env, folder, name, "--work-queue", "default", "--limit", "1")[0]
               for name in ("worker-a", "worker-b")}
    for name in ("gpu-1", "gpu-2"):  # each run waits for the engine inside its flow (RUNNING): they overlap
        workers[name] = _worker(env, folder, name, "--limit", "1", pool="socbench-gpu",
                                extra_env={"SOCBENCH_HOST": "gpubox"})[0]
    return workers


@pytest.mark.timeout(1500)  # the dead run alone waits ~90 s for the zombie rule
def test_sweep_over_two_workers_survives_a_dead_worker_retries_and_places_gpu_runs(
        server: dict, tiny_server, tmp_path: Path, api_url) -> None:
    env = {**server, "OPENAI_API_KEY": "unused", "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}
    out = tmp_path / "results"
    # the GPU host's engine limit (socbench-gpus-gpubox) and the zombie-runs automation: workers_server
    runs = {"domain_id": "all", "start_domain_id": DOMAINS[0], "interview_count": 4, "output_dir": str(out),
            "structured": True}
    models = [{"api_type": "openai", "model": "tiny", "api_base": [f"{tiny_server.url}/v1"]},
              {"api_type": "openai", "model": "tiny-b", "api_base": [f"{tiny_server.url}/v1"],
               "deployment": "issp-domains/gpu", "engine_slots": 1}]
    sent = tiny_server.requests
    controller, controller_log = _worker(env, tmp_path, "controller", "--work-queue", "sweep")
    workers = _start_workers(env, tmp_path)
    try:
        config = {"run": runs, "models": models, "domains_per_run": 3, "engine_limit": "socbench-gpus-{host}"}
        sweep = _run_sweep(env, "sweep-main", config)
        killed = _kill_mid_run(env, workers["worker-a"])
        _single_process_runs(runs, models, tmp_path / "single")  # meanwhile: the dead run is noticed
        assert sweep.wait(timeout=600) == 1, sweep.stdout.read()[-3000:]
        parent, batches, failed = _only_its_domains_failed(env, killed)
        # both workers ran domains at the same time (flow-run records: worker, process, start/end)
        ran = {w: [b for b in batches if b["labels"].get("prefect.worker.name") == w and b["end_time"]]
               for w in ("worker-a", "worker-b")}
        assert any(_overlap(a, b) for a in ran["worker-a"] for b in ran["worker-b"])
        assert len({b["infrastructure_pid"] for b in batches}) == len(batches)  # one process per run
        _gpu_pool_one_engine_per_host(env, batches)

        sent_before, stored_before = sent(), _cache_lines(out / ".cache")[1]
        _retry(env, parent, controller_log)
        reruns = [b for b in _batches(env, "sweep-main") if b["id"] not in {x["id"] for x in batches}]
        assert [sorted(b["parameters"]["domain_ids"]) for b in reruns] == [failed]  # only what failed ...
        assert reruns[0]["labels"]["prefect.worker.name"] == "worker-b"  # ... on the worker still up
        lines, stored = _cache_lines(out / ".cache")
        assert lines == stored  # no answer was ever asked (and stored) twice
        assert sent() - sent_before == stored - stored_before > 0  # the retry sent only the missing ones
        assert stored == _same_as_single_process(models, out, tmp_path / "single")
    finally:
        for proc in [*workers.values(), controller]:
            stop_group(proc, grace_s=30)


# ------------------------------------------------------------- the sweep's runs in this process
# (tests/test_sweep.py's record, on this module's server: a second one on PostgreSQL cost ~30 CPU s)


def test_a_rerun_of_the_sweeps_runs_is_served_from_the_shared_cache(tiny_server, tmp_path, api_url):
    """One dispatched run in-process, twice over the same segment cache: the second sends nothing."""
    from socbench.flows.sweep import issp_domains

    config = sweep(run={"output_dir": str(tmp_path), "interview_count": 2, "structured": True},
                   models=[{"api_type": "openai", "model": "tiny", "api_base": [f"{tiny_server.url}/v1"]}])
    run = config.run_config(0)
    before = tiny_server.requests()
    assert issp_domains(run, [1, 9]) == [1, 9]
    sent, segments = tiny_server.requests() - before, sorted(tmp_path.rglob("*.seg"))
    assert sent > 0 and len(segments) == 1
    assert issp_domains(run, [1, 9]) == [1, 9]
    assert tiny_server.requests() - before == sent and sorted(tmp_path.rglob("*.seg")) == segments


def test_an_engine_limit_that_does_not_exist_is_one_line(api_url):
    from prefect import flow

    from socbench.tasks.engine_slot import engine_slot

    @flow
    def hold() -> None:
        with engine_slot("socbench-test-{host}", 1):
            pass

    with pytest.raises(ConfigError, match=r"engine_limit 'socbench-test-.*prefect gcl create socbench-test-"):
        hold()
