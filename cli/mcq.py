"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process.

Runs the Prefect flow ``mcq`` in this process (no server needed); progress on stderr, the
table and the paths of the files on stdout. Exit 1 when MCP requests got engine errors (the run
is incomplete: MCP is left out of its table; rerun to send only the missing requests).
"""

from __future__ import annotations

import argparse
import sys

from socbench.cli.flags import add_config_flags, config_from_args
from socbench.mcq.config import McqConfig
from socbench.types import McqData


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcq", help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
    add_config_flags(parser, McqConfig)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.cli.inprocess import quiet_libraries, run_flow

    quiet_libraries()
    from socbench.preflight import check_mcq

    config = config_from_args(McqConfig, args)
    data = check_mcq(config)  # dataset, output folder, model or server: before Prefect or a model starts

    outcome = run_flow("mcq", config, meanwhile=lambda: _preload(config, data))  # loads as Prefect starts
    with open(outcome.table, encoding="utf-8") as handle:
        print(handle.read(), end="")
    if outcome.circular_table:
        with open(outcome.circular_table, encoding="utf-8") as handle:
            print(f"\n{handle.read()}", end="")
    for name, path in outcome.paths().items():
        print(f"{name}: {path}")
    if not outcome.complete:
        print(f"socbench: error: {outcome.dataset}: {outcome.incomplete_reason} (incomplete: MCP is "
              "left out; rerun the same command to send only the missing requests)", file=sys.stderr)
        return 1
    return 0


def _preload(config: McqConfig, data: McqData) -> None:
    """Load the model while the server starts, unless the cache answers everything."""
    from socbench.engines.session import get_engine
    from socbench.mcq import build_plan, preload

    plan = build_plan(data, config.method, config.k_shot, config.tolerance, config.seed,
                      config.expansion)
    preload(get_engine(config.engine_settings()), plan)
