"""Issue 15, API row: the whole ``socbench issp --api_type openai`` run vs its requests vs a batch-50 client.

Data: the real ISSP question sets (``/work/shared/issp/``: ``qa/``, ``codebooks/``) with synthetic
respondents (``socbench data synth``), 10 per domain: ~5,300 prompts over 10 domains. The fake
OpenAI server (``bench/api_client.py``'s, 100 ms per answer) runs in its own process. Per pass,
the sides alternate their order: (a) a plain aiohttp client sending the same request bodies in
fixed batches of 50 (the original system); (b) socbench's request phase: the flow's engine
(``CachedEngine(OpenAIEngine)``, 256 in flight) over all the prompts from an empty cache;
(c) the whole CLI run, a fresh process and an empty output folder; (d) the same command again,
fully cached. (c) and (d) run against a running Prefect API (``prefect server start --host 127.0.0.1``,
as deployments, schedules and a user's ``PREFECT_API_URL`` give it), started once before the passes; one
more cold run with a private API (socbench starts its own, as without ``PREFECT_API_URL``) prints that
start's extra time. ``--prefect_api private``: every run starts its own. Targets: (c) <= (b) + 10 s;
(a) / (b) >= 4.5; (d) <= 10 s. Every figure comes with
the 1-min load average, and (a) and (b) with the CPU seconds per 1,000 requests of this process (the
client) and of the server (on a loaded host wall time says little; the two share the cores);
(c) and (d) must write the same answers. ``--profile`` adds the phases of one more cached run
(``bench/api_phases.py``); ``--requests_only``: (a) and (b) alone. ``--quick``: one pass, domain 1,
2 respondents. Usage: ``python -m bench.api_path [--quick] [--repeats 3] [--profile]
[--requests_only] [--issp /work/shared/issp] [--domain_id all]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import api_client, common
from socbench.log.lines import ITEM_TYPES
from socbench.log.read import read_domain
from socbench.studies import task_for

CONCURRENCY = 256


def domain_prompts(data_dir: Path, url: str, domain: str) -> list:
    """Every domain's prompts, built by the pipeline's stages (as the CLI run builds them)."""
    from socbench import pipeline
    from socbench.config import make_config

    config = make_config(data_dir=str(data_dir), domain_id=domain, api_type="openai", api_base=url,
                         model="fake-model")
    return pipeline.all_requests(pipeline.plans(task_for(config)))


def request_phase(url: str, prompts: list) -> int:
    """(b): the flow's engine, empty cache, all prompts in one call; the number answered."""
    from socbench import pipeline
    from socbench.config import make_config
    from socbench.engines.session import close_engines, get_engine

    out = tempfile.mkdtemp(prefix="bench-api-b-")
    config = make_config(output_dir=out, api_type="openai", api_base=url, model="fake-model",
                         concurrent_requests=CONCURRENCY)
    try:
        results = pipeline.generate(get_engine(config.engine_settings()), prompts)
    finally:
        close_engines()
    return sum(r.error is None for r in results)


def cli_run(url: str, data_dir: Path, out: Path, domain: str, private: bool = False) -> dict:
    """(c)/(d): ``socbench issp`` in a fresh process; wall seconds (Python's start included). ``private``:
    without ``PREFECT_API_URL`` (the run starts its own API)."""
    env = {k: v for k, v in os.environ.items() if not (private and k == "PREFECT_API_URL")}
    command = [common.PY, "-m", "socbench.cli", "issp", "--api_type", "openai", "--api_base", url, "--model",
               "fake-model", "--concurrent_requests", str(CONCURRENCY), "--data_dir", str(data_dir),
               "--domain_id", domain, "--output_dir", str(out)]
    seconds, proc, load = common.timed(lambda: subprocess.run(command, cwd=common.ROOT, capture_output=True,
                                                              text=True, env=env))
    if proc.returncode:
        raise SystemExit(f"socbench issp failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return {"s": round(seconds, 2), "load": load}


def answers(out: Path) -> dict[str, str]:
    """Each domain's answers and metrics, to compare two runs (their times and usage differ: a cached
    rerun sends no request)."""
    found = {}
    for path in sorted(out.glob("*/*_detailed.json")):
        domain = read_domain(path)
        details = domain.columns(list(ITEM_TYPES))
        found[path.name] = json.dumps({"details": details, "metrics": domain.stored.metrics}, sort_keys=True)
    return found


def items(found: dict[str, str]) -> int:
    return sum(len(json.loads(text)["details"]["person_id"]) for text in found.values())


def side(name: str, server, send: Callable[[], int], n: int) -> dict:
    """One side's wall seconds, load, and CPU seconds per 1,000 requests of the client and the server."""
    server.reset()
    client, served = time.process_time(), server.cpu_s()
    seconds, ok, load = common.timed(send)
    assert ok == n, f"{name}: {ok} of {n} answered"
    per_1000 = lambda cpu: round(1000 * cpu / n, 3)  # noqa: E731
    return {f"{name}_s": round(seconds, 2), f"{name}_load": load,
            f"{name}_client_cpu_s_per_1000": per_1000(time.process_time() - client),
            f"{name}_server_cpu_s_per_1000": per_1000(server.cpu_s() - served),
            f"{name}_max_in_flight": server.stats()["max_in_flight"]}


def request_sides(n: int, server, calls: list, prompts: list) -> dict:
    """(a) and (b) in turn (the order flips with ``n``)."""
    sides = {"a_batched50": (lambda: api_client.batched_client(server.url, calls), len(calls)),
             "b_request_phase": (lambda: request_phase(server.url, prompts), len(prompts))}
    row: dict = {}
    for name in list(sides) if n % 2 == 0 else list(sides)[::-1]:
        row.update(side(name, server, *sides[name]))
    return row


def one_pass(n: int, server, calls: list, prompts: list, data_dir: Path, domain: str | None) -> dict:
    """One alternating pass: (a) and (b), then (c) and (d) unless ``domain`` is None (requests only)."""
    row = request_sides(n, server, calls, prompts)
    if domain is None:
        print(f"pass {n + 1}: {row}", flush=True)
        return row
    out = Path(tempfile.mkdtemp(prefix="bench-api-cli-"))
    first = cli_run(server.url, data_dir, out, domain)
    before = answers(out)
    cached = cli_run(server.url, data_dir, out, domain)
    assert before and answers(out) == before, "the cached rerun wrote different answers"
    row.update({"c_whole_run_s": first["s"], "c_load": first["load"], "d_cached_rerun_s": cached["s"],
                "d_load": cached["load"], "items": items(before)})
    print(f"pass {n + 1}: {row}", flush=True)
    return row


def profile_phases(url: str, data_dir: Path, domain: str) -> list:
    """Phase marks (seconds since start) of a cold and a cached run, from ``bench/api_phases.py``."""
    out, rows = Path(tempfile.mkdtemp(prefix="bench-api-prof-")), []
    for kind in ("whole run", "cached rerun"):
        proc = subprocess.run([common.PY, "-m", "bench.api_phases", "issp", "--api_type", "openai",
                               "--api_base", url, "--model", "fake-model", "--concurrent_requests",
                               str(CONCURRENCY), "--data_dir", str(data_dir), "--domain_id", domain,
                               "--output_dir", str(out)],
                              cwd=common.ROOT, capture_output=True, text=True, check=True)
        marks = json.loads(proc.stderr.strip().splitlines()[-1])
        rows.append({"run": kind, "load": common.load_avg(), "marks": marks})
        print(f"{kind}: {marks}", flush=True)
    return rows


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--respondents", type=int, default=10, help="synthetic respondents per domain")
    p.add_argument("--issp", type=Path, default=Path("/work/shared/issp"), help="real question sets")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--requests_only", action="store_true", help="(a) and (b) alone: no CLI runs")
    p.add_argument("--domain_id", default="all")
    p.add_argument("--prefect_api", choices=("running", "private"), default="running",
                   help="the CLI runs' Prefect API: one kept up for all of them, or each run's own")
    args = p.parse_args()
    common.setup_env(prefect=True)
    with contextlib.ExitStack() as stack:
        if args.prefect_api == "running" and not args.requests_only:
            from socbench.processes import prefect_server

            os.environ.update(stack.enter_context(prefect_server()))
        measure(args)


def measure(args) -> None:
    """The passes, and the record."""
    domain = "1" if args.quick else args.domain_id
    data_dir = common.synth_data(2 if args.quick else args.respondents, domain, args.issp)
    server = api_client.Server(latency_ms=100)
    try:
        prompts = domain_prompts(data_dir, server.url, domain)
        engine = api_client.engine(server.url, CONCURRENCY)
        calls = [engine._generate_call(p) for p in prompts]
        warm = None  # the quick pass (the tests') runs on an API whose database exists: no warm-up
        if not (args.quick or args.requests_only):
            warm = cli_run(server.url, data_dir, Path(tempfile.mkdtemp(prefix="bench-api-warm-")), domain)
            print(f"warm-up run (creates Prefect's database in the fresh PREFECT_HOME, as any earlier run "
                  f"on a machine has): {warm}", flush=True)
        passes = range(1 if args.quick else args.repeats)
        rows = [one_pass(n, server, calls, prompts, data_dir, None if args.requests_only else domain)
                for n in passes]
        phases = profile_phases(server.url, data_dir, domain) if args.profile else []
        private = None if args.requests_only or args.prefect_api == "private" else \
            cli_run(server.url, data_dir, Path(tempfile.mkdtemp(prefix="bench-api-private-")), domain, True)
    finally:
        server.stop()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k.endswith(("_s", "_per_1000"))}
    speedups = [r["a_batched50_s"] / r["b_request_phase_s"] for r in rows]  # pass by pass
    speedup = statistics.median(speedups)
    met = {"request_phase_ge_4.5x_batch50": speedup >= 4.5}
    print(f"prompts {len(prompts)}; medians {med}\n  batch-50 / request phase: {speedup:.2f}x "
          "(target >= 4.5)", flush=True)
    if not args.requests_only:
        overheads = [r["c_whole_run_s"] - r["b_request_phase_s"] for r in rows]
        med["whole_minus_request_s"] = round(statistics.median(overheads), 2)
        met |= {"whole_run_le_request_phase_plus_10s": med["whole_minus_request_s"] <= 10,
                "cached_rerun_le_10s": med["d_cached_rerun_s"] <= 10}
        if private:
            whole = statistics.median(r["c_whole_run_s"] for r in rows)
            med["private_api_extra_s"] = round(private["s"] - whole, 2)
            print(f"  a cold run with its own private API: {private['s']:.2f} s, "
                  f"{med['private_api_extra_s']:+.2f} s against the running API", flush=True)
        print(f"  whole run - request phase: {med['whole_minus_request_s']:.2f} s (target <= 10)\n"
              f"  cached rerun: {med['d_cached_rerun_s']:.2f} s (target <= 10)", flush=True)
    print(f"  met: {met}", flush=True)
    common.report("api_path", {**med, "prompts": len(prompts)}, "batch-50 client / socbench request phase",
                  speedup, "whole run <= request phase + 10 s; >= 4.5x; cached rerun <= 10 s",
                  all(met.values()), {"met": met, "passes": rows, "phases": phases,
                                      "pair_speedups": [round(s, 2) for s in speedups],
                   "data": f"real ISSP question sets ({args.issp}), synthetic respondents, domain {domain}",
                   "warm_up_run": warm, "quick": args.quick, "requests_only": args.requests_only,
                   "prefect_api": args.prefect_api, "private_api_run": private})


if __name__ == "__main__":
    main()
