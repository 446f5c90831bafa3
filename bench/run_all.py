"""Run every bench script (``make bench``), one fresh process each; summary in bench/out/summary.json.

Usage: ``python -m bench.run_all [--quick] [--only pipeline_vs_bare,api_client]``. Each script
prints its two figures and their ratio; this prints one line per script at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from bench import common

SCRIPTS = ("arc_cp_vs_lmeval", "demo", "pipeline_vs_bare", "threads", "prefix_cache", "api_client",
           "api_path", "orchestration", "data_import")
# Default sizes: ARC on the first 300 items (``--limit 0`` alone for all 2,376), the
# demo's engine comparison on 400 prompts plus one full `make demo`.
DEFAULT_ARGS = {"arc_cp_vs_lmeval": ["--limit", "300"]}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--only", default=",".join(SCRIPTS))
    args = p.parse_args()
    common.setup_env()
    summary = []
    for name in [s.strip() for s in args.only.split(",") if s.strip()]:
        print(f"== {name} (load {common.load_avg()})", flush=True)
        start = time.perf_counter()
        extra = ["--quick"] if args.quick else DEFAULT_ARGS.get(name, [])
        cmd = [common.PY, "-m", f"bench.{name}", *extra]
        rc = subprocess.run(cmd, cwd=common.ROOT).returncode
        out = common.OUT_DIR / f"{name}.json"
        record = json.loads(out.read_text()) if rc == 0 and out.exists() else {}
        summary.append({"name": name, "rc": rc, "seconds": round(time.perf_counter() - start, 1),
                        "ratio_name": record.get("ratio_name"), "ratio": record.get("ratio"),
                        "met": record.get("met"), "load_avg_end": common.load_avg()})
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "summary.json").write_text(json.dumps(summary, indent=2))
    print("\n== summary")
    for row in summary:
        print(f"  {row['name']:<18} rc={row['rc']} {row['seconds']:>7.1f} s  "
              f"{row['ratio_name']}: {row['ratio']}"
              f"  met={row['met']}  load={row['load_avg_end']}")
    sys.exit(max((row["rc"] for row in summary), default=0))


if __name__ == "__main__":
    main()
