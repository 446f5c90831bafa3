"""``socbench issp prompts``: print the first prompts of a domain, byte for byte as a run sends them (built
by the same pipeline stages as the flow)."""

from __future__ import annotations

import argparse

from socbench.cli.flags import add_config_flags, config_from_args, flag, positive_int
from socbench.config import RunConfig

PROMPT_SETTINGS = ("data_dir", "domain_id", "dataset_size", "mode", "shuffle_options", "seed", "no_persona")


def register_prompts(sub: argparse._SubParsersAction) -> None:
    """Add ``issp-prompts`` (typed ``socbench issp prompts``; see ``cli.main``), not listed."""
    parser = sub.add_parser("issp-prompts", prog="socbench issp prompts",
                            description="Print the first prompts of one domain for inspection.")
    add_config_flags(parser, RunConfig, only=PROMPT_SETTINGS, required=("domain_id",))
    flag(parser, "limit", type=positive_int, default=3, help="how many prompts to print (default: 3)")
    parser.set_defaults(handler=show_prompts)


def show_prompts(args: argparse.Namespace) -> int:
    """Build the domain's prompts and print the first ``--limit`` of them."""
    from socbench import pipeline
    from socbench.prompts import prompt_text
    from socbench.studies import task_for

    study = task_for(config_from_args(RunConfig, args))
    [unit] = study.units()
    prompts = pipeline.plan(study, unit).prompts.requests
    for index, request in enumerate(prompts[: args.limit], start=1):
        print(f"=== prompt {index}: item {request.item_id}, mode {request.mode}, "
              f"options shown {' '.join(request.option_order)}, key {request.key[:12]} ===")
        print(prompt_text(request))
        print()
    if not prompts:
        print(f"{unit.label}: no scoreable items")
    return 0
