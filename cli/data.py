"""``socbench data validate|synth``: check a dataset, or write a synthetic one."""

from __future__ import annotations

import argparse

from cli import data_synth, data_validate


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="validate or synthesise ISSP data")
    inner = parser.add_subparsers(dest="data_command", required=True, parser_class=type(parser))
    data_validate.register(inner)
    data_synth.register(inner)
