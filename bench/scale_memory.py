"""Issue 43's memory target at a whole survey's size: a ``socbench issp`` run's memory, stage by stage.

``bench/scale.py`` reports each stage process's peak (VmHWM) only. This runs the same command on the same
module (``bench.scale.write_module``, imported as a user would) through ``bench/api_phases.py`` against the
fake OpenAI server, samples the RSS of the CLI process and of the demographic model's process beside it
(``socbench/background.py``) every 0.2 s, and prints each one's peak between the run's phase marks.
Memory does not depend on the host's load; the seconds do.

Usage: ``python -m bench.scale_memory [--quick] [--respondents 50000] [--issp DIR] [--data DIR]``
(``--issp``: codebooks/ and qa/; ``--data``: a folder ``data import`` already wrote; 50,000 respondents
take ~20 min on 2 cores).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from bench import api_client, common, scale


def _rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        return 0.0  # it ended between two samples


def _descendants(pid: int) -> list[int]:
    try:
        found = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return found + [d for c in found for d in _descendants(c)]


def _beside(pid: int) -> bool:
    """The demographic model's process (``socbench.background``), not the Prefect API's."""
    try:
        return b"socbench.background" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def measure(data: Path) -> dict:
    """One run's (seconds since start, CLI MB, beside MB) samples and its phase marks."""
    out, server = tempfile.mkdtemp(prefix="bench-scale-memory-"), api_client.Server(latency_ms=0)
    err = Path(out) / "stderr.txt"
    command = [common.PY, "-m", "bench.api_phases", "issp", *scale.RUN, "--api_base", server.url,
               "--data_dir", str(data), "--output_dir", out]
    start, samples = time.monotonic(), []
    try:
        with err.open("w") as fh:
            proc = subprocess.Popen(command, cwd=common.ROOT, stdout=subprocess.DEVNULL, stderr=fh)
            while proc.poll() is None:
                beside = [_rss_mb(p) for p in _descendants(proc.pid) if _beside(p)]
                samples.append((time.monotonic() - start, _rss_mb(proc.pid), max(beside, default=0.0)))
                time.sleep(0.2)
    finally:
        server.stop()
    lines = err.read_text().splitlines()
    if proc.returncode:
        raise SystemExit(f"socbench issp failed ({proc.returncode}):\n" + "\n".join(lines[-30:]))
    marks = next((json.loads(line) for line in reversed(lines) if line.startswith("[[")), [])
    return {"seconds": time.monotonic() - start, "samples": samples, "marks": marks}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--respondents", type=int, default=10_000)
    p.add_argument("--issp", type=Path, default=Path("/work/shared/issp"), help="codebooks/ and qa/")
    p.add_argument("--data", type=Path, help="an imported data folder (else the module is written here)")
    args = p.parse_args()
    data, respondents = args.data, 120 if args.quick else args.respondents
    if data is None:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-scale-memory-{respondents}-"))
        source, data = scale.write_module(folder, respondents, args.issp), folder / "data"
        scale.stage("data", "import", source, "--out", data, "--qa",
                    args.issp / "qa" / f"issp_qa_{scale.MODULE}.json", "--sizes", "all")
    found = measure(data)
    samples, rows = found["samples"], {}
    bounds = [("start", 0.0), *found["marks"], ("end", found["seconds"])]
    print(f"{data}: {found['seconds']:.0f} s, load {common.load_avg()[0]:.2f}")
    for (name, since), (_, until) in zip(bounds, bounds[1:], strict=False):
        inside = [(cli, beside) for t, cli, beside in samples if since <= t <= until]
        if inside:
            rows[name] = {"cli_mb": max(c for c, _ in inside), "beside_mb": max(b for _, b in inside)}
            print(f"  from {name:<28} {since:8.1f} s  CLI peak {rows[name]['cli_mb']:7.0f} MB"
                  f"  beside {rows[name]['beside_mb']:7.0f} MB")
    peak = max((c for _, c, _ in samples), default=0.0)
    both = max((c + b for _, c, b in samples), default=0.0)
    common.report("scale_memory", {"cli_peak_mb": peak, "with_beside_mb": both, "seconds": found["seconds"]},
                  "cli_peak_over_4gb", peak / 4096, "<= 1.0 (issue 43: 4 GB at 50,000 respondents)",
                  None if args.quick or args.data else peak <= 4096,
                  {"stages": rows, "respondents": respondents})


if __name__ == "__main__":
    main()
