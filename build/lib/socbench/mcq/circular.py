"""Circular evaluation of MCP on multiple-choice tasks (OpenCompass's CircularEval).

Each item is expanded over its own option count, labelled by position (A, B, ...) as MCP
prompts show them: the texts move, the gold letter is remapped. Every variant is an ordinary
MCP request with the original item's shots, so variants share the engine cache and call (the
identity variant *is* the normal MCP request); ``results.write_mcq_files`` writes the files.

CP is not expanded: a cloze prompt never shows the other options, so their order cannot
change its answer. A run with ``--circular`` says so (``CP_SKIPPED``) and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from socbench.circular import expand_item
from socbench.mcq.datasets import letters
from socbench.types import CircularSettings, McqItem, Variant

CP_SKIPPED = ("circular: CP skipped (a cloze prompt does not show the other options, "
              "so their order cannot change its answer); circular metrics are for MCP")
NO_MCP = "circular: nothing to expand, MCP was not run (add mcp to --method)"
TABLE_MODE = "mcp"  # the summary table's ``mode`` column (OpenCompass: gen, ppl, ...)


def expand_mcq_item(item: McqItem, settings: CircularSettings) -> list[tuple[Variant, McqItem]]:
    """Each variant with the item as displayed: id ``request_id``, options reordered, gold remapped.

    Options are labelled by position, as MCP shows them, whatever the source's labels.
    """
    keys = letters(len(item.choices))
    variants = expand_item(item.id, tuple(zip(keys, item.texts, strict=True)), keys[item.gold], settings)
    return [(v, replace(item, id=v.request_id, choices=v.options, gold=v.shown.index(v.gold)))
            for v in variants]


def circular_notes(methods: Sequence[str]) -> tuple[str, ...]:
    """What a circular run leaves out, one line each (printed, logged, in the results JSON)."""
    return ((CP_SKIPPED,) if "cp" in methods else ()) + (() if "mcp" in methods else (NO_MCP,))


def circular_name(dataset: str, k: int) -> str:
    """The files' stem and the summary table's row: ``<dataset>_mcp_k<k>``."""
    return f"{dataset}_mcp_k{k}"
