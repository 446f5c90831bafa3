"""``socbench mcq``: CP vs MCP on ARC (or MMLU, or an ARC JSONL file), in-process; exit 1 when MCP requests
got engine errors (incomplete: MCP is left out of its table; a rerun sends only the missing requests)."""

from __future__ import annotations

import argparse

from socbench.cli.inprocess import add_study
from socbench.mcq.config import McqConfig


def register(sub: argparse._SubParsersAction) -> None:
    add_study(sub, "mcq", McqConfig,
              help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)")
