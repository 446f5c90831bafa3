"""Issue 15, item 4: does the second core help? 1 vs 2 compute threads, both CPU backends.

transformers: CP log-likelihoods of ARC-Easy items (packed scoring, ``torch_threads``).
vLLM: structured greedy answers to demo prompts (``cpu_threads``). Each pass is a fresh
process (the thread count must be set before the engine starts), the thread counts
alternate ``--repeats`` times, the load average is recorded before and after every pass,
and the answers are compared across thread counts (bf16 rounding can depend on them).
``--quick``: one pass per backend (1 thread, compared with itself), 4 items and 4 prompts on the tiny
random model.
Usage: ``python -m bench.threads [--quick] [--items 100] [--prompts 200] [--repeats 2]``.
"""

from __future__ import annotations

import statistics
import time

from bench import common

WORKER = """
import json, sys, time, os
backend, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from socbench.models import resolve_model
model = resolve_model(sys.argv[4])
if backend == "hf":
    from socbench.engines.hf import HfEngine
    from socbench.engines.settings import HfSettings
    from socbench.mcq.datasets import load_mcq
    from socbench.mcq.prompts import build_plan
    from socbench.mcq.prompts import loglikelihood_requests
    requests = loglikelihood_requests(build_plan(load_mcq("arc-easy", limit=n), ["cp"], [0], False, 1234))
    engine = HfEngine(model, HfSettings(torch_threads=threads))
    run = lambda: [r.logprob for r in engine.loglikelihood(requests)]
else:
    from bench.engines import demo_prompts
    from socbench.engines.registry import create_engine
    prompts = demo_prompts("generate", n)
    engine = create_engine("vllm", sys.argv[4], {"cpu_threads": threads})
    run = lambda: [r.text for r in engine.generate(prompts)]
engine.load()
start = time.perf_counter()
answers = run()
print(json.dumps({"seconds": time.perf_counter() - start, "answers": answers}))
engine.close()
"""


def measure(backend: str, n: int, repeats: int, model: str, counts: tuple[int, ...] = (1, 2)) -> dict:
    """Thread counts ``counts`` (the first against the last) alternating ``repeats`` times, a fresh
    process per pass; the quick pass's ``(1,)`` runs every step once, one start per backend."""
    runs: dict[int, list[dict]] = {t: [] for t in counts}
    for r in range(repeats):
        for threads in counts if r % 2 == 0 else counts[::-1]:
            runs[threads].append(common.worker_pass(WORKER, backend, threads, n, model))
            time.sleep(1 if len(counts) > 1 else 0)
    first, last = runs[counts[0]], runs[counts[-1]]
    one, two = (statistics.median(x["seconds"] for x in passes) for passes in (first, last))
    same = first[0]["answers"] == last[0]["answers"]
    if backend == "hf":
        diffs = [abs(a - b) for a, b in zip(first[0]["answers"], last[0]["answers"])]
        detail = {"max_abs_logprob_diff": round(max(diffs), 4)}
    else:
        detail = {"answers_differing": sum(a != b for a, b in zip(first[0]["answers"], last[0]["answers"]))}
    return {
        "backend": backend,
        "n": n,
        "threads": list(counts),
        "one_thread_s": [x["seconds"] for x in first],
        "two_threads_s": [x["seconds"] for x in last],
        "speed_up_2_over_1": round(one / two, 3),
        "identical_answers": same,
        **detail,
        "loads": {t: [x["load"] for x in runs[t]] for t in runs},
    }


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--items", type=int, default=100, help="ARC items for transformers")
    p.add_argument("--prompts", type=int, default=200, help="demo prompts for vLLM")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    common.setup_env()
    model = str(common.tiny_model()) if args.quick else "smollm2-135m-instruct"
    repeats, counts = (1, (1,)) if args.quick else (args.repeats, (1, 2))
    rows = [
        measure("hf", 4 if args.quick else args.items, repeats, model, counts),
        measure("vllm", 4 if args.quick else args.prompts, repeats, model, counts),
    ]
    for row in rows:
        print(row, flush=True)
    figures = {f"{r['backend']}_1_vs_2_threads_speed_up": r["speed_up_2_over_1"] for r in rows}
    worst = min(r["speed_up_2_over_1"] for r in rows)
    common.report(
        "threads",
        figures,
        "2-thread / 1-thread throughput (worst backend)",
        worst,
        "default 1 compute thread unless 2 are faster on an idle host",
        None,
        {"rows": rows},
    )


if __name__ == "__main__":
    main()
