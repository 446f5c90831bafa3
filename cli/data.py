"""``socbench data validate|synth|import``: check a dataset, write a synthetic one, or import a survey."""

from __future__ import annotations

import argparse
from pathlib import Path

from socbench.cli import data_import, data_validate
from socbench.cli.flags import flag, non_negative_int
from socbench.errors import ConfigError

SYNTH_SEED = 20261122
DEFAULT_RESPONDENTS = 40


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="validate, synthesise or import survey data")
    inner = parser.add_subparsers(dest="data_command", required=True, parser_class=type(parser))
    data_validate.register(inner)
    synth = inner.add_parser(
        "synth", help="write synthetic respondents (demo or your question sets) in the Dataset_all layout",
        description="Write q&a/ and A_GroundTruth_sampling500/ for each domain, with seeded synthetic "
                    "respondents whose answers depend on their attributes. Not ISSP data.")
    flag(synth, "out", type=Path, required=True, help="the Dataset_all folder to write")
    flag(synth, "qa_dir", type=Path, default=None,
         help="folder with issp_qa_<slug>.json to copy and answer (default: the built-in demo questions)")
    flag(synth, "codebook_dir", type=Path, default=None,
         help="folder with issp_profile_<Domain>.json codebooks for attribute names and labels")
    flag(synth, "respondents", type=int, default=DEFAULT_RESPONDENTS,
         help=f"respondents per domain (default {DEFAULT_RESPONDENTS})")
    flag(synth, "seed", type=non_negative_int, default=SYNTH_SEED, help=f"random seed (default {SYNTH_SEED})")
    flag(synth, "domain_id", type=str, default="all", help="domain id, slug or 'all' (default all)")
    synth.set_defaults(handler=run_synth)
    data_import.register(inner)


def run_synth(args: argparse.Namespace) -> int:
    """``socbench data synth``: a synthetic SocioBench ``Dataset_all`` folder."""
    from socbench.data.synth import write_dataset
    from socbench.domains import select_domains

    if args.respondents < 1:
        raise ConfigError(f"--respondents must be a positive integer, got {args.respondents}")
    domains = select_domains(args.domain_id)
    info = write_dataset(args.out, domains, args.respondents, args.seed, args.qa_dir, args.codebook_dir)
    print(f"wrote {len(domains)} domain(s) x {args.respondents} synthetic respondents to {args.out} "
          f"(seed {args.seed}, questions: {info['questions']})")
    return 0
