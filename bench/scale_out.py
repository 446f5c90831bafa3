"""Scale-out: what a deployment run pays to start its engine, and a sweep on one worker vs two.

Engine start (per process, what every run of ``issp-domains`` on a process worker pays once):
``import prefect`` and the flow modules, ``import vllm``, the engine's start, then one demo
domain's generation, for the tiny model and SmolLM2, each in a fresh process.
Workers: a real Prefect server, ``prefect deploy --all``, a controller worker (the sweep
parent's queue) and one, then two, ``--limit 1`` workers; the same sweep (two models served
by vLLM's OpenAI server on the tiny model, the ten demo domains, two domains per run) on an
empty cache each time; wall time of the sweep's flow run from its records. ``--quick`` (the tests'
pass): the tiny model's start alone, and sweeps of two one-domain runs of 4 respondents.
Usage: ``python -m bench.scale_out [--quick] [--skip-start]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

from bench import common
from deployments import local_demo  # the demo's environment and worker helpers
from socbench.processes import prefect_server


def child_start(model: str, out: str) -> None:
    """In this fresh process: imports, engine start and one domain (prints one JSON line)."""
    began = time.perf_counter()
    import socbench.flows.sweep  # noqa: F401 - what a deployment run imports first
    from socbench.config import make_config
    from socbench.engines.session import get_engine

    imported = time.perf_counter()
    import vllm  # noqa: F401

    vllm_imported = time.perf_counter()
    config = make_config(output_dir=out, model=model, interview_count=40, max_tokens=16)
    engine = get_engine(config.engine_settings())
    engine.backend._engine()  # noqa: SLF001 - start it now, to time it apart from generation
    started = time.perf_counter()
    from bench.orchestration import direct

    direct(config, 1)
    done = time.perf_counter()
    print(json.dumps({"model": model, "import_prefect_flows_s": round(imported - began, 2),
                      "import_vllm_s": round(vllm_imported - imported, 2),
                      "engine_start_s": round(started - vllm_imported, 2),
                      "domain_s": round(done - started, 2), "load": common.load_avg()}), flush=True)


def engine_start(models: list[str]) -> list[dict]:
    rows = []
    for model in models:
        out = tempfile.mkdtemp(prefix="bench-start-")
        proc = subprocess.run([common.PY, "-m", "bench.scale_out", "--child-start", model, out],
                              capture_output=True, text=True, cwd=common.ROOT)
        lines = [line for line in proc.stdout.splitlines() if line.startswith('{"model"')]
        if proc.returncode or not lines:
            raise SystemExit(f"engine start of {model} failed:\n{proc.stderr[-3000:]}")
        rows.append(json.loads(lines[-1]))
        print(rows[-1], flush=True)
    return rows


def _parent_wall(api: str) -> float:
    request = urllib.request.Request(f"{api}/flow_runs/filter", method="POST", data=b"{}",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        runs = json.loads(response.read())
    parent = max((r for r in runs if "sweep" in r["tags"] and r["end_time"]), key=lambda r: r["end_time"])
    stamp = [datetime.fromisoformat(parent[k].replace("Z", "+00:00")) for k in ("start_time", "end_time")]
    return (stamp[1] - stamp[0]).total_seconds()


def sweeps(quick: bool) -> list[dict]:
    """The same sweep on one, then two workers; the server on PostgreSQL (docs/scale-out.md: SQLite
    froze every API call for 60 s under three workers)."""
    from tests.vllm_server import VllmServer

    state = Path(tempfile.mkdtemp(prefix="bench-scale-out-"))
    env = {**local_demo.demo_env(0), "OPENAI_API_KEY": "unused", "PREFECT_WORKER_QUERY_SECONDS": "1",
           "TMPDIR": str(state), "PREFECT_HOME": str(state / "home"),
           "PREFECT_MEMO_STORE_PATH": str(state / "home" / "memo_store.toml"),
           "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(state / "home" / "results")}
    vllm = VllmServer(common.tiny_model(), "tiny", state / "vllm.log", dtype="float32",
                      extra=("--served-model-name", "tiny", "tiny-b"))
    worker = [*local_demo.PREFECT, "worker", "start", "--pool", local_demo.POOL]
    rows = []
    with ExitStack() as stack:
        stack.callback(vllm.stop)
        vllm.start()
        env = stack.enter_context(prefect_server(env, state / "server.log", postgres=True))
        local_demo.prefect(["work-pool", "create", local_demo.POOL, "--type", "process", "--overwrite"], env)
        local_demo.prefect(["--no-prompt", "deploy", "--all"], env)
        local_demo.start(stack, [*worker, "--work-queue", "sweep"], env, state / "controller.log")
        models = [{"api_type": "openai", "model": name, "api_base": [f"{vllm.url}/v1"]}
                  for name in ("tiny", "tiny-b")]
        for workers in (1, 2):
            local_demo.start(stack, [*worker, "--work-queue", "default", "--limit", "1"], env,
                             state / f"worker-{workers}.log")
            run = {"domain_id": "all", "interview_count": 4 if quick else 40, "structured": True,
                   "output_dir": str(state / f"results-{workers}"), "start_domain_id": 10 if quick else None}
            config = {"run": run, "models": models, "domains_per_run": 1 if quick else 2}
            local_demo.prefect(["deployment", "run", "issp-sweep/nightly", "--param",
                                f"config={json.dumps(config)}", "--watch"], env)
            rows.append({"workers": workers, "sweep_s": round(_parent_wall(env["PREFECT_API_URL"]), 1),
                         "load": common.load_avg()})
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    common.setup_env()
    if sys.argv[1:2] == ["--child-start"]:
        return child_start(*sys.argv[2:4])
    p = common.parser(__doc__)
    p.add_argument("--skip-start", action="store_true", help="only the one-vs-two-worker sweeps")
    args = p.parse_args()
    models = [str(common.tiny_model())] + ([] if args.quick else ["smollm2-135m-instruct"])
    starts = [] if args.skip_start else engine_start(models)
    rows = sweeps(args.quick)
    ratio = rows[0]["sweep_s"] / rows[1]["sweep_s"]
    figures = {"one_worker_s": rows[0]["sweep_s"], "two_workers_s": rows[1]["sweep_s"]}
    common.report("scale_out", figures, "one worker / two workers (sweep wall time)", ratio,
                  "two workers faster than one (2 cores shared by server, workers and vLLM)", ratio > 1.0,
                  {"sweeps": rows, "engine_start": starts, "quick": args.quick})


if __name__ == "__main__":
    main()
