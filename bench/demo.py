"""`make demo` on fresh clones, phase by phase, and whether its Prefect server kept up.

Issue 30: <= 240 s on an idle 2-core AVX2-only CPU, model conversion and a fresh Prefect database
included. Issue 29: it completes idle and beside a CPU-bound process, with no "database is locked"
in its server log. Each pass clones the committed tree (HEAD: commit first) into a temporary folder,
gives it a venv of its own with this one's packages and the clone installed (the clone's lock and
pyproject are dated back so `make` never reinstalls into it), and runs `make demo` there with a fresh
SOCBENCH_HOME (the model is converted; ``--home DIR`` keeps one). Per pass: seconds, exit code, load
average before and after, the phases (the demo's own lines, stamped as they come, and the worker's
log), and the count of "database is locked" in the server log. ``--engine N`` first compares the two
answer modes on N demo prompts (a fresh process each): what the demo's mode was chosen on. ``--quick``
(the tests' pass) runs only that comparison, on 4 prompts, the tiny random model and one engine for both
modes, and no `make demo`.

Usage: ``python -m bench.demo [--passes 3] [--busy] [--home DIR] [--engine 200] [--keep]``
(the lead's check: ``--passes 3`` idle, then ``--passes 3 --busy``).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from importlib.util import find_spec
from pathlib import Path

from bench import common

ENGINE = """
import json, sys, time
modes, n, model = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3]
from bench.engines import demo_prompts
from socbench.engines.registry import create_engine
engine = create_engine("vllm", model)
engine.load()
for mode in modes:
    prompts = demo_prompts(mode, n + 4)
    run = engine.option_logprobs if mode == "logprobs" else engine.generate
    run(prompts[:4])  # the first request's one-off costs are the engine start's, not the mode's
    start = time.perf_counter()
    answers = [r.text if mode == "generate" else r.option_logprobs for r in run(prompts[4:])]
    print(json.dumps({"seconds": time.perf_counter() - start, "answers": answers}), flush=True)
engine.close()
"""
MODES = ("generate", "logprobs")
LOCKED = "database is locked"
DOMAIN = re.compile(r"^domain (\d+) .*, ([\d.]+) s$")
# the worker's log: Prefect's lines (HH:MM:SS.fff) for the flow's start and domain 1's prompts, vLLM's
# (MM-DD HH:MM:SS) for its engine's end of start-up; both in the local time of this host
STAMPS = {"flow": r"^(\d\d:\d\d:\d\d\.\d+) \| INFO .*Beginning flow run",
          "prompts": r"^(\d\d:\d\d:\d\d\.\d+) \| INFO .*Task run 'build_prompts-",
          "engine": r"INFO \d\d-\d\d (\d\d:\d\d:\d\d) \[core\.py:\d+\] init engine"}


def engine_modes(n: int, model: str = "smollm2-135m-instruct", one_process: bool = False) -> dict:
    """Prompts per second of generate (constrained JSON) and logprobs (one step), host defaults; a fresh
    process per mode (``one_process``: both modes on one engine, the quick pass's single start)."""
    if one_process:
        runs = dict(zip(MODES, common.worker_passes(ENGINE, ",".join(MODES), n, model), strict=True))
    else:
        runs = {mode: common.worker_pass(ENGINE, mode, n, model) for mode in MODES}
    return {mode: {"seconds": r["seconds"], "prompts_per_s": round(n / r["seconds"], 2), "load": r["load"]}
            for mode, r in runs.items()}


def thin_venv(folder: Path) -> Path:
    """A venv for the clone with this one's packages (a .pth) and the clone's socbench installed
    editable, as `make setup` would install it, without downloading the lock again."""
    venv = folder / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    libraries = Path(find_spec("prefect").origin).parents[1]  # where this venv's packages are installed
    (site / "parent-venv.pth").write_text(f"{libraries}\n")
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "-e", str(folder)], check=True, capture_output=True)
    for script in Path(sys.executable).parent.iterdir():  # console scripts (prefect) on the clone's python
        head = script.read_bytes()[:200] if script.is_file() else b""
        target = venv / "bin" / script.name
        if head.startswith(b"#!") and b"python" in head.split(b"\n")[0] and not target.exists():
            target.write_text(f"#!{python}\n" + script.read_text().split("\n", 1)[1])
            target.chmod(0o755)
    return venv


def clone(folder: Path) -> Path:
    """HEAD of this checkout in ``folder`` with its own venv (``thin_venv``) and a valid install stamp."""
    subprocess.run(["git", "clone", "--quiet", str(common.ROOT), str(folder)], check=True)
    venv = thin_venv(folder)
    for name in ("requirements.lock", "pyproject.toml"):
        os.utime(folder / name, (0, 0))  # older than the venv's stamp: `make` does not reinstall
    (venv / ".socbench-installed").touch()
    return folder


def run_demo(folder: Path, home: Path) -> tuple[int, list[tuple[float, str]]]:
    """`make demo` in ``folder``: (exit code, its output lines with seconds since the start)."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
           "SOCBENCH_HOME": str(home)}
    start = time.monotonic()
    proc = subprocess.Popen(["make", "demo"], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip()))
        print(f"  {lines[-1][0]:6.1f} s | {lines[-1][1]}", flush=True)
    return proc.wait(), lines


def phases(lines: list[tuple[float, str]], worker_log: Path, started: float) -> dict:
    """Seconds per phase: the demo's lines mark its own steps, the worker's log the flow's start and the
    engine's (from domain 1's prompts to vLLM's engine up: its import, any wait for the model's
    conversion, its start; whole seconds), each domain's line its seconds."""
    def at(prefix: str) -> float | None:
        return next((t for t, line in lines if line.startswith(prefix)), None)

    first, database = at("demo:"), at("demo: Prefect's database")
    server, deploy = at("demo: starting Prefect server"), at("demo: deploying")
    run, worker, done = at("demo: flow run"), at("demo: starting a process worker"), at("demo: finished")
    text = worker_log.read_text(errors="replace") if worker_log.is_file() else ""
    day = datetime.fromtimestamp(started).date()
    seen = {key: re.search(pattern, text, re.MULTILINE) for key, pattern in STAMPS.items()}
    clock = {key: datetime.combine(day, datetime.strptime(m.group(1).split(".")[0], "%H:%M:%S").time())
             .timestamp() - started for key, m in seen.items() if m}
    flow, prompts, engine = clock.get("flow"), clock.get("prompts"), clock.get("engine")
    domains = {int(m.group(1)): float(m.group(2)) for _, line in lines if (m := DOMAIN.match(line))}
    last = max((t for t, line in lines if DOMAIN.match(line)), default=None)

    def span(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(b - a, 1)

    return {"setup_s": span(0.0, first), "database_s": span(database, server),
            "server_start_s": span(server, deploy), "deploy_s": span(deploy, run),
            "worker_to_flow_start_s": span(worker, flow),
            "engine_start_s (in domain 1)": span(prompts, engine), "domains_s": domains,
            "report_and_stop_s": span(last, done)}


def conversion_s(lines: list[tuple[float, str]], home: Path, started: float) -> float | None:
    """From the demo's "converting" line to the converted model's marker (written last), if it converted."""
    began = next((t for t, line in lines if line.startswith("demo: converting")), None)
    markers = list((home / "models").glob("*/socbench_model.json"))
    return None if began is None or not markers else round(markers[0].stat().st_mtime - started - began, 1)


def one_pass(keep_home: Path | None, keep: bool) -> dict:
    top = Path(tempfile.mkdtemp(prefix="socbench-demo-clone-"))
    top.chmod(0o755)  # as root the demo's PostgreSQL runs as the postgres user, who must reach its folder
    folder = clone(top / "socbench")
    home = keep_home or Path(tempfile.mkdtemp(prefix="socbench-demo-home-"))
    before, started = common.load_avg(), time.time()
    try:
        code, lines = run_demo(folder, home)
        state = folder / ".prefect-demo"
        log = state / "server.log"
        server_log = log.read_text(errors="replace") if log.is_file() else ""
        database = "SQLite" if any("database is SQLite" in line for _, line in lines) else "PostgreSQL"
        return {"seconds": round(time.time() - started, 1), "exit_code": code,
                "load": [before, common.load_avg()], "database": database,
                "database_is_locked": server_log.count(LOCKED),
                "phases": phases(lines, state / "worker.log", started),
                "conversion_s (beside setup, database, API)": conversion_s(lines, home, started),
                "clone": str(folder) if keep else None}
    finally:
        if not keep:
            shutil.rmtree(top, ignore_errors=True)
        if keep_home is None:
            shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--passes", type=int, default=1, help="fresh-clone demo runs, one after the other")
    p.add_argument("--busy", action="store_true", help="a CPU-bound process beside each run")
    p.add_argument("--home", type=Path, default=None, help="a SOCBENCH_HOME to keep (converted once)")
    p.add_argument("--engine", type=int, default=0, help="first: the two modes on N demo prompts")
    p.add_argument("--keep", action="store_true", help="keep each clone (its .prefect-demo logs)")
    args = p.parse_args()
    common.setup_env()
    if args.quick:
        engine, args.passes = engine_modes(4, str(common.tiny_model()), one_process=True), 0
    else:
        engine = engine_modes(args.engine) if args.engine else None
    if engine:
        print(f"engine: {engine}", flush=True)
    home = args.home
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        runs = [one_pass(home, args.keep) for _ in range(args.passes)]
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    for run in runs:
        print(f"demo: {run}", flush=True)
    seconds = statistics.median(r["seconds"] for r in runs) if runs else float("nan")
    locked = sum(r["database_is_locked"] for r in runs)
    met = all(r["exit_code"] == 0 for r in runs) and locked == 0 and seconds <= 240
    common.report("demo" + ("_busy" if args.busy else ""),
                  {"median_demo_s": seconds, "passes": len(runs), "database_is_locked": locked},
                  "median make demo seconds / 240", seconds / 240, "<= 240 s idle, every pass exit 0, "
                  "no 'database is locked'", met, {"busy": args.busy, "runs": runs, "engine": engine})


if __name__ == "__main__":
    main()
