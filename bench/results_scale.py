"""The results log's readers at a whole survey's size (issue 43): ``socbench report``, ``estimate`` and
``export`` (long and ``--wide``) must each take at most 60 s at 10,000 respondents, grow at most linearly
(<= 11x from 1,000 to 10,000) and keep their memory bounded.

A run folder is written without an engine: a synthetic survey of N respondents per domain on the demo's
question sets (``socbench data synth``: 10 domains, ~56 questions in all, ~56,000 items at N = 1,000),
its answers drawn at random from the offered codes (seeded), scored and summarised by the score stage's
own code (the yardsticks, which ``bench/yardsticks_scale.py`` measures, left out) and written through
``socbench.log.write``, then ``summary.json`` as a run's end writes it. Each command runs in this process
(``socbench.cli.main``); its wall seconds and this process's peak resident memory so far are printed.
Usage: ``python -m bench.results_scale [--quick] [--sizes 1000,10000] [--profile DIR]``.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import common
from socbench.data.loaders import load_domain
from socbench.data.options import build_items
from socbench.domains import select_domains
from socbench.log.write import write_scored_domain
from socbench.metrics.persona_groups import respondent_groups
from socbench.report.markdown import write_run_summary
from socbench.scoring import design_weights, score_items, summarize_domain
from socbench.types import Extraction, ScoredDomain

LINEAR = 11.0  # 1,000 -> 10,000 respondents: at most this many times the seconds
LIMIT_S = 60.0  # each command at 10,000 respondents
MODEL = "bench-model"
COMMANDS = {"report": ["report", "{run}", "--out", "{tmp}/report"],
            "estimate": ["estimate", "{run}"],
            **{f"export_{fmt}": ["export", "{run}", "--format", fmt, "--out", "{tmp}/answers." + fmt]
               for fmt in ("csv", "dta", "sav")}}  # --wide needs an imported survey: not synth's


def write_run(data_dir: Path, out: Path, seed: int = 0) -> Path:
    """A run folder of every domain in ``data_dir``, answered at random; its path."""
    rng, results = np.random.default_rng(seed), []
    for domain in select_domains("all", data_dir=data_dir):
        data = load_domain(data_dir, domain)
        items = build_items(data)
        answers = {i.item_id: Extraction(i.offered_codes[rng.integers(len(i.offered_codes))])
                   for i in items if i.excluded_reason is None}
        scored = score_items(items, answers, respondent_groups(data.respondents, data.roles,
                                                               data.issp_vocabulary))
        weights, off = design_weights(data)
        result = summarize_domain(data.domain_id, data.domain_name, MODEL, items, scored,
                                  data.unmapped_countries, len(data.respondents), weights=weights,
                                  weights_off=off, texts={q.id: q.text for q in data.questions}, run=MODEL,
                                  grouping=data.grouping)
        result = replace(result, sample=data.sample)
        write_scored_domain(out, ScoredDomain(tuple(scored), result, None))
        results.append(result)
    data = {"data_dir": str(data_dir.resolve()), "interview_count": "all", "interview_sample": "first"}
    write_run_summary(out, MODEL, results, data=data)
    return out / MODEL


def time_commands(run: Path, profile: Path | None) -> dict[str, dict[str, float]]:
    """Each command's wall and CPU seconds (this host is shared: CPU is what load does not inflate) and
    the peak resident memory so far (MB); ``profile``: a cProfile file per command there."""
    from socbench.cli import main

    found, tmp = {}, Path(tempfile.mkdtemp(prefix="bench-results-"))
    for name, argv in COMMANDS.items():
        args = [a.format(run=run, tmp=tmp) for a in argv]
        profiler = cProfile.Profile() if profile else None
        start, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            code = profiler.runcall(main, args) if profiler else main(args)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if profiler and profile:
            profile.mkdir(parents=True, exist_ok=True)
            profiler.dump_stats(profile / f"{name}.prof")
        if code != 0:
            raise SystemExit(f"socbench {' '.join(args)}: exit {code}")
        found[name] = {"s": round(seconds, 2), "cpu_s": round(cpu, 2), "peak_mb": round(common.max_rss_mb())}
    return found


def measure(respondents: int, profile: Path | None, keep: Path | None) -> dict[str, Any]:
    """Write (or, kept, reuse) the run of ``respondents`` per domain; time every command on it."""
    kept = keep / str(respondents) if keep else None
    started = time.perf_counter()
    if kept and (kept / MODEL / "summary.json").is_file():
        run = kept / MODEL
    else:
        run = write_run(common.synth_data(respondents), kept or Path(tempfile.mkdtemp(prefix="bench-run-")))
    written = time.perf_counter() - started
    size = sum(p.stat().st_size for p in run.iterdir() if p.is_file()) / 2**20
    commands = time_commands(run, profile and profile / str(respondents))
    print(f"N={respondents}: written in {written:.0f} s ({size:.0f} MB); {commands}; "
          f"load {common.load_avg()}", flush=True)
    return {"respondents": respondents, "written_s": round(written, 1), "folder_mb": round(size, 1),
            "commands": commands}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--sizes", default="1000,10000", help="respondents per domain, smallest first")
    p.add_argument("--profile", type=Path, help="a cProfile file per size and command in this folder")
    p.add_argument("--keep", type=Path, help="write each size's run here once and reuse it after")
    args = p.parse_args()
    common.setup_env()
    sizes = [100, 200] if args.quick else [int(n) for n in args.sizes.split(",")]
    runs = [measure(n, args.profile, args.keep) for n in sizes]
    first, last = runs[0]["commands"], runs[-1]["commands"]
    ratios = {name: round(last[name]["cpu_s"] / max(first[name]["cpu_s"], 1e-3), 2) for name in first}
    worst, bound = max(ratios.values()), LINEAR / 10 * sizes[-1] / sizes[0]
    slowest = max(c["s"] for c in last.values())
    common.report("results_scale", {**{f"{n}_ratio": r for n, r in ratios.items()}, "slowest_s": slowest},
                  f"largest growth, {sizes[0]} -> {sizes[-1]} respondents", worst,
                  f"<= {bound:g}x (linear), each <= {LIMIT_S:g} s", None if args.quick
                  else worst <= bound and slowest <= LIMIT_S, {"runs": runs, "cores": os.cpu_count()})


if __name__ == "__main__":
    main()
