"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process.

Runs the Prefect flow ``mcq`` in this process (no server needed) and prints the table.
"""

from __future__ import annotations

import argparse
import os

from cli.flags import add_config_flags, config_from_args
from socbench.mcq.config import McqConfig
from socbench.types import McqData


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcq", help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
    add_config_flags(parser, McqConfig)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.preflight import check_mcq

    config = config_from_args(McqConfig, args)
    data = check_mcq(config)  # dataset, output folder, model or server: before Prefect or a model starts
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


def _preload(config: McqConfig, data: McqData) -> None:
    """Load the model while the server starts, unless the cache answers everything."""
    from socbench.engines.session import get_engine
    from socbench.mcq import build_plan, preload

    plan = build_plan(data, config.method, config.k_shot, config.tolerance, config.seed,
                      config.circular_settings())
    preload(get_engine(config.engine_settings()), plan)
