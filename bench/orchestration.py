"""Target 5: Prefect's overhead per domain, and a fully cached rerun of all ten demo domains.

Overhead: the ``issp-domain`` flow (ephemeral Prefect, warmed up by one untimed flow) minus
the same stage bodies called directly (``task.fn``; the report stage's files without its
artifact), each from an empty engine cache, against the fake OpenAI server (no latency).
Cached rerun: the ``issp`` parent flow over the ten demo domains on the tiny vLLM model,
then the same run again in a fresh process, which must not import vLLM at all.
``--quick``: one domain of two synthetic respondents for both parts, no untimed warm-up flow.
Usage: ``python -m bench.orchestration [--quick] [--domains 3]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

from bench import common
from socbench.studies import task_for


def direct(config, domain_id: int) -> None:
    """The same stages without Prefect: the pipeline's functions, the report's files without artifacts."""
    from socbench import pipeline
    from socbench.engines.session import get_engine

    study = task_for(config)
    unit = study.unit(domain_id)
    study.report(pipeline.score_unit(study, unit, get_engine(config.engine_settings())), 0.0)


def overhead(domains: list[int], data_dir: str, warm: bool = True) -> list[dict]:
    from socbench.config import make_config
    from socbench.engines.session import close_engines
    from socbench.flows.issp import issp_domain
    from tests.support.fake_openai import FakeOpenAIServer

    def config(tag: str):
        out = tempfile.mkdtemp(prefix=f"bench-orch-{tag}-")
        return make_config(data_dir=data_dir, output_dir=out, api_type="config", api_base=server.url,
                           model="fake-model", concurrent_requests=256)

    rows = []
    with FakeOpenAIServer() as server:
        if warm:  # starts the ephemeral Prefect server: not timed (the quick pass runs on the tests' API)
            issp_domain(domains[0], config("warm"))
        for d in domains:
            direct_s, _, load_d = common.timed(direct, config("direct"), d)
            close_engines()
            flow_s, _, load_f = common.timed(issp_domain, d, config("flow"))
            rows.append({"domain": d, "direct_s": round(direct_s, 2), "flow_s": round(flow_s, 2),
                         "overhead_s": round(flow_s - direct_s, 2), "load_direct": load_d,
                         "load_flow": load_f})
            print(rows[-1], flush=True)
    return rows


def child(kind: str, out: str, data_dir: str, model: str, domain: str) -> None:
    """One ``issp`` run in this fresh process; prints its wall time and whether vLLM was imported."""
    start = time.perf_counter()
    from socbench.config import make_config
    from socbench.flows import run_inprocess
    from socbench.flows.issp import issp

    config = make_config(data_dir=data_dir, output_dir=out, api_type="vllm", model=model, max_tokens=16,
                         domain_id=domain)
    flow_start = time.perf_counter()
    outcome = run_inprocess(issp, config)
    end = time.perf_counter()
    print(json.dumps({"kind": kind, "flow_s": round(end - flow_start, 2), "process_s": round(end - start, 2),
                      "completed": len(outcome.completed), "failed": outcome.failed,
                      "vllm_imported": "vllm" in sys.modules, "load": common.load_avg()}), flush=True)


def cached_rerun(data_dir: str, model: str, domain: str) -> list[dict]:
    """The first run and its rerun, each in a fresh process (``common.HERE``: the first in this one; the
    rerun must be fresh, to show it never imports vLLM)."""
    out = tempfile.mkdtemp(prefix="bench-rerun-")
    rows = []
    for kind in ("first", "rerun"):
        start = time.perf_counter()
        if common.HERE and kind == "first":
            stdout, failed = common.here(child, kind, out, data_dir, model, domain), ""
        else:
            proc = subprocess.run([common.PY, "-m", "bench.orchestration", "--child", kind, out, data_dir,
                                   model, domain], capture_output=True, text=True, cwd=common.ROOT)
            stdout, failed = proc.stdout, proc.returncode and proc.stderr[-3000:]
        lines = [line for line in stdout.splitlines() if line.startswith('{"kind"')]
        if failed or not lines:
            raise SystemExit(f"{kind} run failed:\n{failed}")
        rows.append({**json.loads(lines[-1]),
                     "wall_s_with_python_start": round(time.perf_counter() - start, 2)})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    common.setup_env(prefect=True)
    if sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:7])
    p = common.parser(__doc__)
    p.add_argument("--domains", type=int, default=3, help="domains timed for the overhead")
    args = p.parse_args()
    model = str(common.tiny_model())
    domain = "1" if args.quick else "all"  # quick: one domain of two respondents, no warm-up flow
    demo = common.ROOT / "data" / "demo" / "Dataset_all"
    data_dir = str(common.synth_data(2, domain) if args.quick else demo)
    rows = overhead(list(range(1, (1 if args.quick else args.domains) + 1)), data_dir, warm=not args.quick)
    rerun = cached_rerun(data_dir, model, domain)
    per_domain = max(r["overhead_s"] for r in rows)
    second = rerun[1]
    met = per_domain <= 1.5 and second["wall_s_with_python_start"] < 30 and not second["vllm_imported"]
    figures = {"direct_s_mean": round(sum(r["direct_s"] for r in rows) / len(rows), 2),
               "flow_s_mean": round(sum(r["flow_s"] for r in rows) / len(rows), 2),
               "overhead_s_max": per_domain, "first_run_s": rerun[0]["wall_s_with_python_start"],
               "cached_rerun_s": second["wall_s_with_python_start"],
               "cached_rerun_vllm_imported": second["vllm_imported"]}
    common.report("orchestration", figures, "flow/direct time (mean)",
                  figures["flow_s_mean"] / figures["direct_s_mean"],
                  "overhead <= 1.5 s/domain; cached rerun of 10 domains < 30 s, model never loads", met,
                  {"overhead": rows, "rerun": rerun, "quick": args.quick})


if __name__ == "__main__":
    main()
