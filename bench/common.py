"""Shared helpers of the bench scripts: environment, timing, load average, JSON output.

Every script prints its two figures and their ratio and writes ``bench/out/<name>.json`` (or into
``$SOCBENCH_BENCH_OUT``: the tests' quick passes write to a temporary folder) with the load average
beside each number (this host is shared; numbers are noisy).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from socbench.processes import cpu_defaults

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = Path(os.environ.get("SOCBENCH_BENCH_OUT") or ROOT / "bench" / "out")
PY = sys.executable
# Set by the tests' quick passes: what would run in a fresh process (a worker's pass) runs in this one,
# which has torch and vLLM imported already (a fresh process pays ~40 CPU s to import them and start).
HERE = False


def setup_env(prefect: bool = False) -> None:
    """The CPU settings from stack-notes, and a private Prefect home when ``prefect``."""
    cpu_defaults()
    os.environ.setdefault("SOCBENCH_HOME", str(ROOT / ".socbench"))
    os.environ.setdefault("VLLM_CACHE_ROOT", str(ROOT / ".socbench" / "vllm"))
    if prefect:
        home = Path(tempfile.mkdtemp(prefix="bench-prefect-"))
        for key, value in {"PREFECT_HOME": home, "PREFECT_MEMO_STORE_PATH": home / "memo_store.toml",
                           "PREFECT_RESULTS_LOCAL_STORAGE_PATH": home / "results",
                           "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
                           "PREFECT_LOGGING_LEVEL": "WARNING"}.items():
            os.environ.setdefault(key, str(value))


def load_avg() -> list[float]:
    """1, 5 and 15 minute load averages (2 cores here: above 2 means others share the CPU)."""
    return [round(x, 2) for x in os.getloadavg()]


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any, list[float]]:
    """(wall seconds, result of ``fn(*args)``, load average when it finished)."""
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result, load_avg()


def worker_passes(code: str, *args: object) -> list[dict]:
    """Run ``python -c code args`` in a fresh process (``HERE``: in this one); each stdout line that starts
    with ``{"seconds"`` is one timed pass (JSON with ``seconds`` and ``answers``); the load average before
    and after is added."""
    before = load_avg()
    if HERE:
        stdout = here(exec, code, {"__name__": "__main__"}, argv=["-c", *map(str, args)])
    else:
        proc = subprocess.run([PY, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                              check=False)
        if proc.returncode:
            raise SystemExit(f"pass {args} failed: {proc.stderr[-2000:]}")
        stdout = proc.stdout
    outs = [json.loads(line) for line in stdout.splitlines() if line.startswith('{"seconds"')]
    return [{"seconds": round(out["seconds"], 2), "answers": out["answers"], "load": [before, load_avg()]}
            for out in outs]


def here(fn: Callable[..., Any], *args: Any, argv: list[str] | None = None) -> str:
    """What ``fn(*args)`` prints, run in this process (with ``sys.argv`` set to ``argv`` meanwhile)."""
    out, saved = io.StringIO(), sys.argv
    sys.argv = argv or saved
    try:
        with contextlib.redirect_stdout(out):
            fn(*args)
    finally:
        sys.argv = saved
    return out.getvalue()


def worker_pass(code: str, *args: object) -> dict:
    """One timed pass in a fresh process (``worker_passes``: its last)."""
    return worker_passes(code, *args)[-1]


def max_rss_mb() -> float:
    """Peak resident memory of this process in MB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run, minutes)")
    return p


def report(name: str, figures: dict[str, float], ratio_name: str, ratio: float, target: str,
           met: bool | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Print the figures and their ratio; write bench/out/<name>.json; return the record."""
    record = {"name": name, "figures": figures, "ratio_name": ratio_name, "ratio": round(ratio, 3),
              "target": target, "met": met, "load_avg_end": load_avg(), **(extra or {})}
    for key, value in figures.items():
        print(f"  {key}: {value}")
    print(f"  {ratio_name}: {ratio:.3f}   (target: {target}; met: {met}; load {load_avg()})", flush=True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"{name}.json").write_text(json.dumps(record, indent=2, default=str))
    return record


def tiny_model() -> Path:
    """The tiny random Qwen2 model (tests/support/tiny_model.py), built once under $SOCBENCH_HOME/bench."""
    from tests.support.tiny_model import build_tiny_model

    path = Path(os.environ.get("SOCBENCH_HOME") or ROOT / ".socbench") / "bench" / "tiny-qwen2"
    if not (path / "config.json").is_file():
        build_tiny_model(path)
    return path


def synth_data(respondents: int, domain: str = "all", issp: Path | None = None) -> Path:
    """A Dataset_all folder with ``respondents`` synthetic respondents per domain (a temp dir), as
    ``socbench data synth`` writes it; ``issp``: a folder with the real question sets (``qa/``) and
    codebooks (``codebooks/``)."""
    from socbench.cli.data import SYNTH_SEED
    from socbench.data.synth import write_dataset
    from socbench.domains import select_domains

    out = Path(tempfile.mkdtemp(prefix="bench-data-")) / "Dataset_all"
    write_dataset(out, select_domains(domain), respondents, SYNTH_SEED, issp and issp / "qa",
                  issp and issp / "codebooks")
    return out
