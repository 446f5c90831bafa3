"""The yardsticks' cost at a whole survey's size (issue 43): each must grow at most linearly (<= 11x from
1,000 to 10,000 respondents) in bounded memory.

A synthetic survey of N respondents per domain on the demo's question sets (``socbench data synth``: 10
domains, 5-6 questions each, ~56,000 items at N = 1,000, the size of the issue's Citizenship run), its
answers drawn at random from the offered codes (seeded), scored by the score stage's own code and every
yardstick computed directly, no cache: the demographic model (``yardsticks.demographic_side``), the LLM's
SimBench and structure figures, the paired structure comparison and the ranking alignment
(``ranking.question_view``). Each stage's CPU seconds (one untraced pass), then its peak traced memory
(``tracemalloc``, a second pass), summed (CPU) and maxed (memory) over the domains; the load average beside.
``--issp DIR``: the real question sets and codebooks (``DIR/qa``, ``DIR/codebooks``) instead of the demo's.
Usage: ``python -m bench.yardsticks_scale [--quick] [--sizes 1000,10000] [--domain_id all] [--issp DIR]``.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import common
from socbench.data.loaders import load_domain
from socbench.data.options import build_items
from socbench.domains import select_domains
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.persona_groups import respondent_groups
from socbench.metrics.ranking import question_view
from socbench.metrics.simbench import simbench_score
from socbench.metrics.structure import structure
from socbench.metrics.structure_difference import profile_resamples
from socbench.scoring import design_weights, score_items
from socbench.types import Extraction
from socbench.yardsticks import demographic_side, shown_attributes

LINEAR = 11.0  # 1,000 -> 10,000 respondents: at most this many times the cost


def domain_stages(data_dir: Path, domain: Any, seed: int = 0) -> dict[str, Callable[[], Any]]:
    """The yardstick stages of one domain's randomly answered items, each a call with no cache."""
    data = load_domain(data_dir, domain)
    items = build_items(data)
    rng = np.random.default_rng(seed)
    answers = {i.item_id: Extraction(i.offered_codes[rng.integers(len(i.offered_codes))])
               for i in items if i.excluded_reason is None}
    groups = respondent_groups(data.respondents, data.roles, data.issp_vocabulary)
    scored = score_items(items, answers, groups)
    weights, _ = design_weights(data)
    attributes = shown_attributes(data)
    texts = {q.id: q.text for q in data.questions}
    return {
        "demographic_model": lambda: demographic_side(scored, attributes, weights=weights),
        "simbench_structure": lambda: (simbench_score(scored, DEFAULT_MIN_RESPONDENTS), structure(scored)),
        "structure_comparison": lambda: profile_resamples(scored),  # one predictor's half
        "ranking": lambda: question_view(items, scored, texts, DEFAULT_MIN_RESPONDENTS, weights),
    }


def cost(call: Callable[[], Any], memory: bool) -> dict[str, float]:
    """CPU seconds of one pass; with ``memory``, a second, traced pass's peak (MB)."""
    cpu = time.process_time()
    call()
    found = {"cpu_s": time.process_time() - cpu}
    if memory:
        tracemalloc.start()
        try:
            call()
            found["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
    return found


def measure(respondents: int, domain_id: str, memory: bool, issp: Path | None = None) -> dict[str, Any]:
    """Every stage's CPU seconds (summed over domains) and peak memory (the largest domain's)."""
    data_dir = common.synth_data(respondents, domain_id, issp)
    totals: dict[str, dict[str, float]] = {}
    items, load = 0, [common.load_avg()]
    for domain in select_domains(domain_id):
        stages = domain_stages(data_dir, domain)
        for name, call in stages.items():
            found, total = cost(call, memory), totals.setdefault(name, {"cpu_s": 0.0, "peak_mb": 0.0})
            total["cpu_s"] += found["cpu_s"]
            total["peak_mb"] = max(total["peak_mb"], found.get("peak_mb", 0.0))
        items += len(build_items(load_domain(data_dir, domain)))
        load.append(common.load_avg())
    rounded = {name: {k: round(v, 2) for k, v in total.items()} for name, total in totals.items()}
    print(f"N={respondents}: {items} items; {rounded}; load {load[0]} -> {load[-1]}", flush=True)
    return {"respondents": respondents, "items": items, "stages": rounded, "load": load}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--sizes", default="1000,10000", help="respondents per domain, smallest first")
    p.add_argument("--domain_id", default="all")
    p.add_argument("--no_memory", action="store_true", help="CPU seconds only (no traced pass)")
    p.add_argument("--issp", type=Path, help="a folder with the real qa/ and codebooks/")
    args = p.parse_args()
    common.setup_env()
    sizes = [20, 100] if args.quick else [int(n) for n in args.sizes.split(",")]
    domain = "1" if args.quick else args.domain_id
    runs = [measure(n, domain, not args.no_memory, args.issp) for n in sizes]
    first, last = runs[0]["stages"], runs[-1]["stages"]
    ratios = {name: round(last[name]["cpu_s"] / max(first[name]["cpu_s"], 1e-3), 2) for name in first}
    worst, bound = max(ratios.values()), LINEAR / 10 * sizes[-1] / sizes[0]
    common.report("yardsticks_scale", {f"{name}_ratio": r for name, r in ratios.items()},
                  f"largest CPU growth, {sizes[0]} -> {sizes[-1]} respondents", worst,
                  f"<= {bound:g}x (linear)", None if args.quick else worst <= bound,
                  {"runs": runs, "domain_id": domain, "cores": os.cpu_count()})


if __name__ == "__main__":
    main()
