"""``socbench issp``: run the ISSP benchmark in-process (the same Prefect flow, no server).

Progress on stderr (``cli.inprocess``); on stdout the table in 120 columns (domain, accuracy
[CI], strongest baseline, margin, failures) and the paths of the summary and the HTML report.
Exit 1 if a domain failed or is incomplete or an ``--export`` format could not be written, one line
each on stderr.
``socbench issp prompts ...`` prints prompts for inspection instead (``cli.issp_prompts``).
"""

from __future__ import annotations

import argparse
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
    from cli.inprocess import quiet_libraries, run_flow

    quiet_libraries()
    from socbench.preflight import check_run

    check_run(config)  # bad paths and settings fail here, before Prefect or a model starts
    outcome = run_flow("issp", config, meanwhile=_preload_figures)
    from socbench.progress import run_table  # after: it imports scikit-learn, while Prefect's API starts

    if outcome.rows:
        print("\n".join(run_table(outcome.rows)))
    print(f"summary: {outcome.summary}\nreport: {outcome.report}", flush=True)
    for domain_id, reason in outcome.failed.items():
        print(f"socbench: error: domain {domain_id} failed: {reason}", file=sys.stderr)
    for reason in outcome.incomplete.values():
        print(f"socbench: error: {reason} (incomplete: rerun the same command to send only the missing "
              "requests)", file=sys.stderr)
    for line in outcome.export_failed:
        print(f"socbench: error: export failed: {line}", file=sys.stderr)
    return 0 if outcome.ok else 1


def _preload_figures() -> None:
    """matplotlib for the report, imported while Prefect's API starts (after the server is spawned:
    ``socbench.report`` imports scikit-learn)."""
    from socbench.report.output import preload_figures

    preload_figures()
