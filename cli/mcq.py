"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process.

Runs the Prefect flow ``mcq`` in this process (no server needed) and prints the table.
"""

from __future__ import annotations

import argparse
import os

from cli.flags import add_config_flags, config_from_args
from socbench.mcq.config import McqConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcq", help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
    add_config_flags(parser, McqConfig)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.preflight import check_mcq

    config = config_from_args(McqConfig, args)
    check_mcq(config)  # dataset, output folder, model or server: before Prefect or a model starts
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.mcq import mcq_inprocess

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
