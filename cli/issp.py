"""``socbench issp``: run the ISSP benchmark in-process (the same Prefect flow, no server); exit 1 if a
domain failed or is incomplete. ``socbench issp prompts ...`` prints prompts instead (``cli.issp_prompts``).
"""

from __future__ import annotations

import argparse

from socbench.cli.inprocess import add_study
from socbench.cli.issp_prompts import register_prompts
from socbench.config import RunConfig


def register(sub: argparse._SubParsersAction) -> None:
    add_study(sub, "issp", RunConfig, help="run the ISSP persona benchmark (issp prompts: print its prompts)",
              description="Run the ISSP persona benchmark through the Prefect flow in this process. "
                          "`socbench issp prompts --help`: print prompts instead.")
    register_prompts(sub)
