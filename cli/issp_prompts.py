"""``socbench issp prompts``: print the first prompts of a domain, exactly as a run sends them.

Prompts are built through the same RunConfig and ``build_domain_prompts`` call as the
flows, so what is printed is byte-for-byte what the engine would receive.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from socbench.cli.flags import add_config_flags, config_from_args, flag, positive_int
from socbench.config import RunConfig
from socbench.types import Item, PromptRequest

PROMPT_SETTINGS = ("data_dir", "domain_id", "dataset_size", "mode", "shuffle_options", "seed", "no_persona")


def register_prompts(sub: argparse._SubParsersAction) -> None:
    """Add ``issp-prompts`` (typed ``socbench issp prompts``; see ``cli.route``), not listed."""
    parser = sub.add_parser("issp-prompts", prog="socbench issp prompts",
                            description="Print the first prompts of one domain for inspection.")
    add_config_flags(parser, RunConfig, only=PROMPT_SETTINGS, required=("domain_id",))
    flag(parser, "limit", type=positive_int, default=3, help="how many prompts to print (default: 3)")
    parser.set_defaults(handler=show_prompts)


def _header(index: int, request: PromptRequest) -> str:
    order = " ".join(request.option_order)
    return (f"=== prompt {index}: item {request.item_id}, mode {request.mode}, "
            f"options shown {order}, key {request.key[:12]} ===")


def show_prompts(args: argparse.Namespace) -> int:
    """Load the domain, build its prompts and print the first ``--limit`` of them."""
    from socbench.data import build_items, load_domain
    from socbench.domains import get_domain
    from socbench.prompts import build_domain_prompts, prompt_text

    config = config_from_args(RunConfig, args)
    domain = get_domain(config.domain_id, config.dataset_dir)
    data = load_domain(config.dataset_dir, domain, config.dataset_size)
    by_person: dict[int, list[Item]] = defaultdict(list)
    for item in build_items(data):
        by_person[item.person_id].append(item)
    prompts: list[PromptRequest] = []
    for person in data.respondents:  # build only as many respondents as the limit needs
        prompts += build_domain_prompts(data, by_person[person.person_id], config)
        if len(prompts) >= args.limit:
            break
    for index, request in enumerate(prompts[: args.limit], start=1):
        print(_header(index, request))
        print(prompt_text(request))
        print()
    if not prompts:
        print(f"domain {domain.id} ({domain.name}): no scoreable items")
    return 0
