"""``socbench data validate|synth|import``: check a dataset, write a synthetic one, or import a survey."""

from __future__ import annotations

import argparse

from socbench.cli import data_import, data_synth, data_validate


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="validate, synthesise or import survey data")
    inner = parser.add_subparsers(dest="data_command", required=True, parser_class=type(parser))
    data_validate.register(inner)
    data_synth.register(inner)
    data_import.register(inner)
