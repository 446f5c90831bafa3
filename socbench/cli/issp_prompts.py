"""``socbench issp prompts``: print the first prompts of a domain, exactly as a run sends them.

Prompts are built through the same RunConfig and ``build_domain_prompts`` call as the
flows, so what is printed is byte-for-byte what the engine would receive.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from socbench.cli._args import flag, positive_int
from socbench.types import Item, PromptRequest


def register_prompts(sub: argparse._SubParsersAction) -> None:
    """Add ``prompts`` to the ``issp`` group's subparsers."""
    parser = sub.add_parser("prompts", help="print the first prompts of a domain for inspection")
    flag(parser, "data_dir", default=None, help="a SocioBench Dataset_all folder (default: demo data)")
    flag(parser, "domain_id", required=True, help="one domain id or slug (the manifest's, else 1-4, 6-11)")
    flag(parser, "limit", type=positive_int, default=3, help="how many prompts to print (default 3)")
    flag(parser, "dataset_size", type=positive_int, default=500, help="reads A_GroundTruth_sampling<N>")
    flag(parser, "mode", choices=["generate", "logprobs"], default="generate")
    flag(parser, "shuffle_options", action="store_true", help="seeded per (seed, person, question)")
    flag(parser, "seed", type=int, default=42, help="run seed for option shuffling (default 42)")
    flag(parser, "no_persona", action="store_true", help="the persona-free control prompt")
    parser.set_defaults(handler=show_prompts)


def _header(index: int, request: PromptRequest) -> str:
    order = " ".join(request.option_order)
    return (f"=== prompt {index}: item {request.item_id}, mode {request.mode}, "
            f"options shown {order}, key {request.key[:12]} ===")


def show_prompts(args: argparse.Namespace) -> int:
    """Load the domain, build its prompts and print the first ``--limit`` of them."""
    from socbench.config import make_config
    from socbench.data import build_items, load_domain
    from socbench.domains import get_domain
    from socbench.prompts import build_domain_prompts, prompt_text

    domain = get_domain(args.domain_id, args.data_dir)
    config = make_config(data_dir=args.data_dir, domain_id=domain.id, dataset_size=args.dataset_size,
                         mode=args.mode, shuffle_options=args.shuffle_options, seed=args.seed,
                         include_persona=not args.no_persona)
    data = load_domain(config.data_dir, domain, config.dataset_size)
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
