"""``socbench issp``: run the ISSP benchmark in-process (the same Prefect flow, no server).

``socbench issp prompts ...`` prints prompts for inspection instead (``cli.issp_prompts``).
"""

from __future__ import annotations

import argparse
import os
import sys

from cli.flags import add_config_flags, config_from_args
from socbench.config import RunConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("issp", help="run the ISSP persona benchmark (issp prompts: print its prompts)",
                            description="Run the ISSP persona benchmark through the Prefect flow in this "
                                        "process. `socbench issp prompts --help`: print prompts instead.")
    add_config_flags(parser, RunConfig)
    parser.set_defaults(handler=run)
    from cli.issp_prompts import register_prompts

    register_prompts(sub)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(RunConfig, args)
    from socbench.preflight import check_run

    check_run(config)  # bad paths and settings fail here, before Prefect or a model starts
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from flows.issp import issp_inprocess

    outcome = issp_inprocess(config)
    print(f"summary: {outcome['summary']}")
    if outcome["failed"]:
        for domain_id, reason in outcome["failed"].items():
            print(f"socbench: error: domain {domain_id} failed: {reason}", file=sys.stderr)
        return 1
    return 0
