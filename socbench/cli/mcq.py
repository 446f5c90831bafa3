"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process.

Runs the Prefect flow ``mcq`` in this process (no server needed) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os

from socbench.cli._args import flag, positive_int
from socbench.config import DEFAULT_MODEL


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcq", help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
    flag(parser, "dataset", default="arc-easy",
         help="arc-easy, arc-challenge, mmlu or an ARC-format JSONL file")
    flag(parser, "method", default="cp,mcp", help="comma-separated: cp (CP-RAW/UN/LN) and/or mcp")
    flag(parser, "k_shot", default="0",
         help="comma-separated shot counts, e.g. 0,1,5 (shots drawn from another split)")
    flag(parser, "tolerance", action="store_true",
         help="also score MCP-Tolerance (naming an option's digit counts as choosing it)")
    flag(parser, "model", default=DEFAULT_MODEL, help="HF folder, .gguf file or built-in name")
    flag(parser, "api_type", choices=["auto", "vllm", "hf"], default="auto",
         help="in-process backend; auto: transformers on a CPU host (scoring only), vLLM on a GPU")
    flag(parser, "engine", type=json.loads, default=None,
         help="engine settings as JSON, e.g. '{\"dtype\": \"float32\"}'")
    flag(parser, "limit", type=positive_int, default=None, help="evaluate only the first N items")
    flag(parser, "seed", type=int, default=1234, help="few-shot draw seed")
    flag(parser, "output_dir", default="results")
    flag(parser, "cache_dir", default=None, help="engine cache folder (default: <output_dir>/.cache)")
    flag(parser, "circular", choices=["circular", "all_possible"], default=None,
         help="also ask MCP with each item's options rotated (or in all orders); CP is skipped")
    flag(parser, "max_variants", type=positive_int, default=None,
         help="with --circular all_possible: a seeded sample of N orders per item")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.mcq.config import make_mcq_config

    config = make_mcq_config(dataset=args.dataset, method=args.method, k_shot=args.k_shot,
                             tolerance=args.tolerance, model=args.model, api_type=args.api_type,
                             engine=args.engine, limit=args.limit, seed=args.seed,
                             output_dir=args.output_dir, cache_dir=args.cache_dir, circular=args.circular,
                             max_variants=args.max_variants)
    data = _preflight(config)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.ephemeral import ServerStart

    server = ServerStart().start_in_background()  # Prefect's temporary API boots meanwhile (issue 15)
    try:
        if server.starting:
            _preload(config, data)
        from flows.mcq import mcq_inprocess
    finally:
        server.wait()  # also on failure: the server is then stopped at exit, never left behind
    outcome = mcq_inprocess(config)
    with open(outcome["table"], encoding="utf-8") as handle:
        print(handle.read(), end="")
    if outcome.get("circular_table"):
        with open(outcome["circular_table"], encoding="utf-8") as handle:
            print(f"\n{handle.read()}", end="")
    for name in ("results", "predictions", "csv", "plot", "circular_table"):
        if outcome.get(name):
            print(f"{name}: {outcome[name]}")
    return 0


def _preload(config, data) -> None:
    """Load the model while the server starts, unless the cache answers everything."""
    from socbench.engines.session import get_engine
    from socbench.mcq import build_plan, preload

    plan = build_plan(data, config.method, config.k_shot, config.tolerance, config.seed)
    preload(get_engine(config.run_config()), plan)


def _preflight(config):
    """Dataset, output folder and model fail here in seconds, before Prefect or a model starts."""
    from socbench.mcq.datasets import load_mcq
    from socbench.models import resolve_model
    from socbench.preflight import check_output_dir

    data = load_mcq(config.dataset, limit=config.limit, fewshot=max(config.k_shot) > 0)
    settings = config.circular_settings()
    if settings is not None:
        from socbench.mcq.circular import check_circular

        check_circular(data, settings)
    check_output_dir(config.output_dir)
    resolve_model(config.model)
    config.run_config()
    return data
