"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process.

Runs the Prefect flow ``mcq`` in this process (no server needed); progress on stderr, the table and the
paths of the files on stdout. Exit 1 when MCP requests got engine errors (the run is incomplete: MCP is
left out of its table; rerun to send only the missing requests).
"""

from __future__ import annotations

import argparse

from socbench.cli.flags import add_config_flags, config_from_args
from socbench.mcq.config import McqConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcq", help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
    add_config_flags(parser, McqConfig)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.cli.inprocess import run_study

    return run_study(config_from_args(McqConfig, args))
