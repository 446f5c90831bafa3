"""Issue 15, row 2: `make demo` (10 domains, 2,163 structured prompts, SmolLM2) against 180 s.

Two parts, one run:
1. The engine on the demo prompts, side by side, alternating (a fresh process per pass):
   ``before`` = the engine as it ran before issue 15 (torch's default of one thread per core,
   vLLM's native RMSNorm), ``now`` = today's defaults (one compute thread, the bit-identical
   RMSNorm of ``engines/_vllm_cpu``), and ``one_step`` = single-step scoring of the codes after
   the answer prefix, the lower bound of any decoding shortcut (a greedy walk over the
   grammar needs at least this one step per prompt). ``before`` and ``now`` answers must be
   identical.
2. ``deployments/local_demo.py`` end to end (fresh results and Prefect state), with the
   time split by phase from the worker's log, and answers compared with ``--reference``
   (a results folder of an earlier demo run) when given.
Usage: ``python -m bench.demo [--prompts 400] [--repeats 2] [--skip_demo] [--reference DIR]``.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import time
from datetime import datetime
from pathlib import Path

from bench import common

WORKER = """
import dataclasses, json, sys, time
variant, n = sys.argv[1], int(sys.argv[2])
from bench.engines import demo_prompts
from socbench.engines.settings import VllmSettings
from socbench.engines.vllm import VllmEngine
from socbench.models import resolve_model
prompts = demo_prompts("generate", n)
settings = VllmSettings.for_host({"cpu_threads": 2} if variant == "before" else {})
engine = VllmEngine(resolve_model("smollm2-135m-instruct"), settings)
engine.load()
if variant == "before":
    from vllm import ir
    for op in ("rms_norm", "fused_add_rms_norm"):
        getattr(ir.ops, op).set_default(["native"])
if variant == "one_step":
    prefix = '{"answer": "'
    asked = [dataclasses.replace(p, mode="logprobs", structured=False, answer_prefix=prefix) for p in prompts]
    run = lambda: [r.option_logprobs for r in engine.option_logprobs(asked)]
else:
    run = lambda: [r.text for r in engine.generate(prompts)]
start = time.perf_counter()
answers = run()
print(json.dumps({"seconds": time.perf_counter() - start, "answers": answers}))
engine.close()
"""
VARIANTS = ("before", "now", "one_step")


def engine_side_by_side(n: int, repeats: int) -> dict:
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for r in range(repeats):
        for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            runs[variant].append(common.worker_pass(WORKER, variant, n))
    median = {v: statistics.median(x["seconds"] for x in runs[v]) for v in VARIANTS}
    differ = sum(a != b for a, b in zip(runs["before"][0]["answers"], runs["now"][0]["answers"]))
    return {
        "prompts": n,
        "seconds": {v: [x["seconds"] for x in runs[v]] for v in VARIANTS},
        "prompts_per_s": {v: round(n / median[v], 1) for v in VARIANTS},
        "now_over_before": round(median["before"] / median["now"], 3),
        "one_step_over_decode": round(median["now"] / median["one_step"], 3),
        "answers_differing_before_vs_now": differ,
        "loads": {v: [x["load"] for x in runs[v]] for v in VARIANTS},
    }


def phases(log: Path, started: float) -> dict:
    """Seconds from the demo's start to the flow's start, to the first domain's end, per domain after."""
    stamps: list[tuple[float, str]] = []
    day = datetime.fromtimestamp(started).date()
    for line in log.read_text(errors="replace").splitlines():
        match = re.match(
            r"(\d\d:\d\d:\d\d\.\d+) \| INFO .*?(Beginning flow run|Flow run 'issp-domain-\d+' - "
            r"Finished|Flow run '[a-z-]+' - Finished)",
            line,
        )
        if match:
            moment = datetime.combine(day, datetime.strptime(match.group(1), "%H:%M:%S.%f").time())
            stamps.append((moment.timestamp() - started, match.group(2)))
    domains = [t for t, what in stamps if "issp-domain" in what]
    flow_start = next((t for t, what in stamps if what == "Beginning flow run"), None)
    return {
        "to_flow_start_s": flow_start,
        "first_domain_done_s": domains[0] if domains else None,
        "later_domains_s": [round(b - a, 1) for a, b in zip(domains, domains[1:])],
        "flow_done_s": stamps[-1][0] if stamps else None,
    }


def answers(folder: Path) -> dict[tuple[str, int, str], str | None]:
    out = {}
    for path in sorted(folder.glob("*_detailed.json")):
        for row in json.loads(path.read_text())["details"]:
            out[(path.name, row["person_id"], row["question_id"])] = row["llm_answer"]
    return out


def full_demo(reference: Path | None) -> dict:
    for path in (common.ROOT / "results", common.ROOT / ".prefect-demo"):
        shutil.rmtree(path, ignore_errors=True)
    started = time.time()
    seconds, proc, load = common.timed(
        lambda: subprocess.run(
            [common.PY, "deployments/local_demo.py"],
            capture_output=True,
            text=True,
            cwd=common.ROOT,
            check=False,
        )
    )
    row = {
        "seconds": round(seconds, 1),
        "exit_code": proc.returncode,
        "load": load,
        "phases": phases(common.ROOT / ".prefect-demo" / "worker.log", started),
    }
    got = answers(common.ROOT / "results" / "smollm2-135m-instruct")
    row["answers"] = len(got)
    if reference is not None:
        expected = answers(reference)
        row["differing_from_reference"] = sum(got.get(k) != v for k, v in expected.items())
    return row


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--prompts", type=int, default=400)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--skip_demo", action="store_true")
    p.add_argument("--reference", type=Path, default=None, help="results/<model> folder of an earlier demo")
    args = p.parse_args()
    common.setup_env()
    engine = engine_side_by_side(60 if args.quick else args.prompts, 1 if args.quick else args.repeats)
    print(f"engine: {engine}", flush=True)
    demo = None if args.skip_demo else full_demo(args.reference)
    print(f"demo: {demo}", flush=True)
    figures = {"engine_prompts_per_s": engine["prompts_per_s"], "demo_s": demo and demo["seconds"]}
    met = None if demo is None else demo["seconds"] <= 180 and demo.get("differing_from_reference", 0) == 0
    common.report(
        "demo",
        figures,
        "make demo seconds / 180",
        (demo["seconds"] / 180) if demo else float("nan"),
        "<= 180 s, same answers",
        met,
        {"engine": engine, "demo": demo},
    )


if __name__ == "__main__":
    main()
