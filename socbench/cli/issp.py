"""``socbench issp``: run the ISSP benchmark in-process (the same Prefect flow, no server).

``socbench issp prompts ...`` prints prompts for inspection instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from socbench.cli._args import flag, int_or_all, positive_float, positive_int
from socbench.config import DEFAULT_MODEL, make_config


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The seed's flags (snake_case as written there; kebab-case accepted too)."""
    flag(parser, "domain_id", default="all", help="domain id (1-4, 6-11) or 'all' (default)")
    flag(parser, "start_domain_id", type=int, default=None, help="with --domain_id all: start here")
    flag(parser, "interview_count", type=int_or_all, default="all", help="respondents per domain (N or 'all')")
    flag(parser, "dataset_size", type=positive_int, default=500, help="sample folder A_GroundTruth_sampling<N>")
    flag(parser, "api_type", choices=["vllm", "config", "hf"], default="vllm")
    flag(parser, "model", default=DEFAULT_MODEL, help="HF folder, .gguf file or built-in name")
    flag(parser, "api_base", default=None, help="OpenAI-compatible base URL(s), comma-separated")
    flag(parser, "api_key_env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    flag(parser, "concurrent_requests", type=positive_int, default=64)
    flag(parser, "request_timeout_s", type=positive_float, default=60.0,
         help="seconds a server may stay silent (no answer to any request nor to a /v1/models probe) "
              "before its in-flight requests are retried; a busy server that answers is never cut "
              "short (api_type config)")
    flag(parser, "engine", type=json.loads, default=None, help="engine settings as JSON, e.g. '{\"dtype\": \"float32\"}'")
    flag(parser, "mode", choices=["generate", "logprobs"], default="generate")
    flag(parser, "structured", action=argparse.BooleanOptionalAction, default=None,
         help="constrain answers to {\"answer\": code} (default: on for vllm and config)")
    flag(parser, "seed", type=int, default=42)
    flag(parser, "shuffle_options", action="store_true", help="seeded per (seed, person, question); recorded")
    flag(parser, "no_persona", action="store_true", help="control run: leave the persona out of the prompt")
    flag(parser, "temperature", type=float, default=0.0)
    flag(parser, "max_tokens", type=positive_int, default=64)
    flag(parser, "data_dir", default=None, help="a SocioBench Dataset_all folder (default: the demo data)")
    flag(parser, "output_dir", default="results")
    flag(parser, "circular", choices=["circular", "all_possible"], default=None,
         help="re-ask every item with its options rotated (or in all orders)")
    flag(parser, "max_variants", type=positive_int, default=None,
         help="with --circular all_possible: a seeded sample of N orders for items with > 5 options")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("issp", help="run the ISSP persona benchmark (or print its prompts)")
    add_run_flags(parser)
    parser.set_defaults(handler=run)
    inner = parser.add_subparsers(dest="issp_command", required=False, parser_class=type(parser))
    from socbench.cli.issp_prompts import register_prompts

    register_prompts(inner)


def config_from_args(args: argparse.Namespace):
    return make_config(
        domain_id=args.domain_id, start_domain_id=args.start_domain_id, interview_count=args.interview_count,
        dataset_size=args.dataset_size, api_type=args.api_type, model=args.model, api_base=args.api_base,
        api_key_env=args.api_key_env, concurrent_requests=args.concurrent_requests,
        request_timeout_s=args.request_timeout_s, engine=args.engine,
        mode=args.mode, structured=args.structured, seed=args.seed, shuffle_options=args.shuffle_options,
        include_persona=not args.no_persona, temperature=args.temperature, max_tokens=args.max_tokens,
        data_dir=args.data_dir, output_dir=args.output_dir, circular=args.circular,
        max_variants=args.max_variants,
    )


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
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
