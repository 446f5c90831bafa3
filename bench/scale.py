"""Issue 43's scale bench: a whole survey of N respondents, end to end as a user runs it, beside a batch-50
client sending the same requests to the same server.

The survey: a GESIS-shaped module file (``.dta``; every variable, label and value label of the real
codebook, ``--issp``'s ``codebooks/``, values seeded, a country's own variables empty for the others)
with N respondents over the module's 33 countries (unequal, seeded sizes), imported under the real
question set (``qa/``). Each stage runs in a fresh process that reports its own wall seconds and peak RSS
(VmHWM, as ``bench/data_import.py``): ``data import --sizes all``; ``issp --dataset_size all
--interview_count all`` against the fake OpenAI server (its own process, no latency); the same command
again (its completion marker answers); again without the marker (every answer from the engine cache,
every later stage computed); ``report``; ``estimate``; ``export --format dta``; and the batch-50 client
(``bench/api_client.py``'s, its requests built by the pipeline; only its sending is timed). The table:
stage, seconds, peak MB, the 1-min load average after it; then the run, less what it waited for its own
Prefect API (the target allows the API's start), over the client.
``--repeats K`` sends the run and the client K times each (the run from an empty results folder, so from an
empty engine cache), alternating, and takes each one's median: the host's run-to-run spread is about +-1 s.
Usage: ``python -m bench.scale [--quick] [--sizes 1000,10000] [--issp /work/shared/issp] [--keep]
[--repeats K]``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import api_client, common
from bench.data_import import CHILD

MODULE = "citizenship"
COUNTRIES = ("AU AT CL TW HR CZ DK FI FR GE IS IN JP KR LT NL NO PH PL RU SK SI ZA ES SE CH TR US VE BE DE "
             "IL GB-GBN").split()
RUN = ["--domain_id", "1", "--dataset_size", "all", "--interview_count", "all", "--api_type", "openai",
       "--model", "fake-model"]
GROWTH = 11.0  # each stage at most this many times slower from 1,000 to 10,000 respondents


def country_sizes(respondents: int, seed: int = 43) -> dict[str, int]:
    """``respondents`` over the module's countries, unequal as ISSP's are (0.5 to 1.5 equal shares)."""
    share = np.random.default_rng(seed).uniform(0.5, 1.5, len(COUNTRIES))
    counts = np.maximum(1, np.floor(share / share.sum() * respondents)).astype(int)
    counts[0] += respondents - counts.sum()
    return dict(zip(COUNTRIES, counts.tolist(), strict=True))


def write_module(folder: Path, respondents: int, issp: Path) -> Path:
    """The module's ``.dta`` (the test fixtures' GESIS-shaped writer, from the real codebook)."""
    from tests.fixtures import issp_microdata

    codebook = issp_microdata.read_codebook(issp / "codebooks" / f"issp_profile_{MODULE}.json")
    data = issp_microdata.build(codebook, "dta", sizes=country_sizes(respondents))
    country = data.frame["C_ALPHAN"].str[:2]
    for name in data.frame.columns:  # a country's own variable (AT_RELIG) is system-missing elsewhere, as
        if name[2:3] == "_" and name[:2] in set(country):  # in GESIS's files (not every one in every prompt)
            data.frame.loc[country != name[:2], name] = np.nan
    return issp_microdata.write(data, folder / "ZA6670_v2-0-0.dta")


def stage(*argv: object) -> dict:
    """``socbench *argv`` in a fresh process: wall seconds, its peak RSS, the load average after."""
    start = time.perf_counter()
    proc = subprocess.run([common.PY, "-c", CHILD, *map(str, argv)], capture_output=True, text=True,
                          cwd=common.ROOT, check=False)
    seconds = time.perf_counter() - start
    last = proc.stdout.strip().splitlines()[-1:] or ["{}"]
    child = json.loads(last[0]) if last[0].startswith("{") else {}
    if proc.returncode or child.get("rc"):
        raise SystemExit(f"socbench {' '.join(map(str, argv))} failed:\n{proc.stdout[-2000:]}\n"
                         f"{proc.stderr[-3000:]}")
    waited = re.search(r"waited ([0-9.]+) s for its own Prefect API", proc.stderr)  # the run's own API
    return {"s": round(seconds, 2), "peak_mb": round(child["max_rss_mb"], 1), "load": common.load_avg()[0],
            "api_wait_s": float(waited.group(1)) if waited else 0.0}


def client_child(data_dir: str, url: str) -> None:
    """The batch-50 client in this (fresh) process: the run's requests, built as the pipeline builds them,
    sent 50 at a time; prints the seconds of the sending alone."""
    from socbench import pipeline
    from socbench.config import make_config
    from socbench.studies import task_for

    flags = dict(zip(RUN[::2], RUN[1::2], strict=True))
    config = make_config(data_dir=data_dir, api_base=url, **{k.lstrip("-"): v for k, v in flags.items()})
    prompts = pipeline.all_requests(pipeline.plans(task_for(config)))
    engine = api_client.engine(url, 256)
    calls = [engine._generate_call(p) for p in prompts]
    del prompts
    pipeline.forget()
    start = time.perf_counter()
    ok = api_client.batched_client(url, calls)
    hwm = re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)
    print(json.dumps({"seconds": time.perf_counter() - start, "requests": len(calls), "ok": ok,
                      "peak_mb": int(hwm) / 1024}), flush=True)


def client(data_dir: Path, url: str) -> dict:
    proc = subprocess.run([common.PY, "-m", "bench.scale", "--client", str(data_dir), url],
                          capture_output=True, text=True, cwd=common.ROOT, check=False)
    if proc.returncode:
        raise SystemExit(f"the batch-50 client failed:\n{proc.stderr[-3000:]}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["ok"] == found["requests"], f"batch-50 client: {found}"
    return {"s": round(found["seconds"], 2), "peak_mb": round(found["peak_mb"], 1),
            "requests": found["requests"], "load": common.load_avg()[0]}


def measure(respondents: int, issp: Path, keep: bool, repeats: int = 1) -> dict:
    """Every stage of one survey size; the folder is removed after unless ``keep``."""
    folder = Path(tempfile.mkdtemp(prefix=f"bench-scale-{respondents}-"))
    data, out = folder / "data", folder / "results"
    run_dir = out / "fake-model"
    source = write_module(folder, respondents, issp)
    server = api_client.Server(latency_ms=0)
    rows: dict[str, dict] = {}
    try:
        rows["import"] = stage("data", "import", source, "--out", data, "--qa",
                               issp / "qa" / f"issp_qa_{MODULE}.json", "--sizes", "all")
        run = ["issp", *RUN, "--api_base", server.url, "--data_dir", data, "--output_dir", out]
        rows["issp run"] = stage(*run)
        rows["issp cached rerun"] = stage(*run)  # the same command: its completion marker answers
        (run_dir / "last_run.json").unlink()
        rows["rerun, no marker"] = stage(*run)  # every answer from the engine cache, every stage after it
        rows["report"] = stage("report", out)
        rows["estimate"] = stage("estimate", run_dir)
        rows["export dta"] = stage("export", run_dir, "--format", "dta")
        rows["batch-50 client"] = client(data, server.url)
        pairs = [(rows["issp run"], rows["batch-50 client"])]
        for _ in range(repeats - 1):  # again from an empty folder and cache, then the client again
            shutil.rmtree(out)
            pairs.append((stage(*run), client(data, server.url)))
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    runs = [run_row["s"] - run_row["api_wait_s"] for run_row, _ in pairs]
    ratio = float(np.median(runs)) / float(np.median([client_row["s"] for _, client_row in pairs]))
    print(f"\nN = {respondents:,} respondents, {rows['batch-50 client']['requests']:,} requests"
          f"{f' (kept: {folder})' if keep else ''}")
    print(f"  {'stage':<20} {'seconds':>9} {'peak MB':>9} {'load 1m':>8}")
    for name, row in rows.items():
        print(f"  {name:<20} {row['s']:>9.2f} {row['peak_mb']:>9.1f} {row['load']:>8.2f}")
    median = f" (medians of {repeats})" if repeats > 1 else ""
    print(f"  run, less what it waited for its Prefect API, / client{median}: {ratio:.2f}x (target <= 1.5x)",
          flush=True)
    if repeats > 1:
        print("  each time, run less its API wait / client: " + ", ".join(
            f"{r:.1f}/{c['s']:.1f}" for r, (_, c) in zip(runs, pairs, strict=True)) + " s (medians above)")
    return {"respondents": respondents, "stages": rows, "run_over_client": round(ratio, 2),
            "repeats": [{"run_less_wait_s": round(r, 2), "client_s": c["s"]}
                        for r, (_, c) in zip(runs, pairs, strict=True)]}


def main() -> None:
    if sys.argv[1:2] == ["--client"]:
        common.setup_env()
        return client_child(sys.argv[2], sys.argv[3])
    p = common.parser(__doc__)
    p.add_argument("--sizes", default="1000,10000", help="respondents, smallest first")
    p.add_argument("--issp", type=Path, default=Path("/work/shared/issp"), help="codebooks/ and qa/")
    p.add_argument("--keep", action="store_true", help="keep each size's data and results folder")
    p.add_argument("--repeats", type=int, default=1, help="the run and the client this many times; medians")
    args = p.parse_args()
    common.setup_env(prefect=True)
    sizes = [120] if args.quick else [int(n) for n in args.sizes.split(",")]
    runs = [measure(n, args.issp, args.keep, args.repeats) for n in sizes]
    first, last = runs[0]["stages"], runs[-1]["stages"]
    growth = {name: round(last[name]["s"] / max(first[name]["s"], 1e-3), 2) for name in first}
    if len(runs) > 1:
        print(f"growth {sizes[0]:,} -> {sizes[-1]:,}: {growth}")
    worst = max(run["run_over_client"] for run in runs)
    common.report("scale", {f"run_over_client_{run['respondents']}": run["run_over_client"] for run in runs},
                  "largest run / batch-50 client", worst, "<= 1.5x; every stage <= 11x per 10x respondents",
                  None if args.quick else worst <= 1.5 and max(growth.values()) <= GROWTH * sizes[-1]
                  / sizes[0] / 10, {"runs": runs, "growth": growth, "quick": args.quick,
                                    "data": f"{MODULE} codebook and question set of {args.issp}"})


if __name__ == "__main__":
    main()
