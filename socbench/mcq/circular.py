"""Circular evaluation of MCP on multiple-choice tasks (OpenCompass's CircularEval).

Each item is expanded with ``socbench.circular.expand_item`` over its own option count,
labelled by position (A, B, ...) as MCP prompts show them: the texts move, the gold letter
is remapped. Every variant of an (item, k) is an ordinary MCP request with the shots drawn
for the original item, so variants share the engine cache and one engine call with the
normal requests; the identity variant *is* the normal MCP request (same key). A variant is
scored with the MCP rule and its letter mapped back through ``VariantResult``.

CP is not expanded: a cloze prompt never shows the other options, so their order cannot
change its answer. A run with ``--circular`` says so (``CP_SKIPPED``) and goes on.

Files per k, beside the normal ones in ``<output_dir>/<model>/mcq/``:
``<dataset>_mcp_k<k>_circular.jsonl`` and ``_circular_metrics.json``; one
``<dataset>_circular_summary.md``/``.csv`` (rows ``<dataset>_mcp_k<k>``, OpenCompass's
layout); the same metrics go into ``<dataset>_results.json`` under ``circular``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socbench.circular import CircularSettings, MCItem, Variant, VariantResult, expand_item, variant_patterns
from socbench.mcq.datasets import McqData, McqItem, letters
from socbench.mcq.prompts import ItemPrompts, McqPlan, item_prompts
from socbench.mcq.results import mcq_dir
from socbench.mcq.scoring import mcp_predictions
from socbench.report.circular import (
    circular_table,
    default_metric_types,
    write_circular_files,
    write_circular_table,
)
from socbench.types import EngineResult, PromptRequest

CP_SKIPPED = ("circular: CP skipped (a cloze prompt does not show the other options, "
              "so their order cannot change its answer); circular metrics are for MCP")
NO_MCP = "circular: nothing to expand, MCP was not run (add mcp to --method)"
TABLE_MODE = "mcp"  # the summary table's ``mode`` column (OpenCompass: gen, ppl, ...)


# ----------------------------------------------------------------------- variants


def letter_item(item: McqItem) -> MCItem:
    """The item as MCP shows it: options labelled by position, whatever the source's labels."""
    keys = letters(len(item.choices))
    return MCItem(item.id, tuple(zip(keys, item.texts)), keys[item.gold])


def expand_mcq_item(item: McqItem, settings: CircularSettings) -> list[tuple[Variant, McqItem]]:
    """Each variant with the item as displayed: id ``request_id``, options reordered, gold remapped."""
    variants = expand_item(letter_item(item), settings.mode, max_variants=settings.max_variants,
                           seed=settings.seed)
    return [(v, item.model_copy(update={"id": v.request_id, "choices": v.options,
                                        "gold": v.shown.index(v.gold)}))
            for v in variants]


def check_circular(data: McqData, settings: CircularSettings) -> None:
    """Fail in seconds (ConfigError) if an item cannot be expanded, e.g. all_possible over 6 options."""
    first_of_size: dict[int, McqItem] = {}
    for item in data.items:
        first_of_size.setdefault(len(item.choices), item)
    for n, item in first_of_size.items():
        variant_patterns(letters(n), settings.mode, max_variants=settings.max_variants,
                         seed=settings.seed, qid=item.id)


def circular_notes(methods: Sequence[str]) -> tuple[str, ...]:
    """What a circular run leaves out, one line each (printed, logged, in the results JSON)."""
    return ((CP_SKIPPED,) if "cp" in methods else ()) + (() if "mcp" in methods else (NO_MCP,))


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class VariantPrompt:
    """One variant of one (item, k): the variant and its MCP request (``prompts.mcp``)."""

    variant: Variant
    prompts: ItemPrompts


@dataclass(frozen=True)
class CircularPlan:
    dataset: str
    settings: CircularSettings
    k_shots: tuple[int, ...]
    prompts: tuple[VariantPrompt, ...]  # items in order, k inner, variants of one (item, k) adjacent
    notes: tuple[str, ...]

    def option_requests(self) -> list[PromptRequest]:
        """Unique by key; the identity variants' keys are the normal plan's MCP keys."""
        unique = {p.prompts.mcp.key: p.prompts.mcp for p in self.prompts if p.prompts.mcp is not None}
        return list(unique.values())


def build_circular_plan(data: McqData, plan: McqPlan, settings: CircularSettings) -> CircularPlan:
    """MCP requests for every variant of every (item, k) of ``plan``, with that (item, k)'s shots."""
    pool = {shot.id: shot for shot in data.fewshot_pool}
    prompts: list[VariantPrompt] = []
    if "mcp" in plan.methods:
        for p in plan.prompts:
            shots = [pool[shot_id] for shot_id in p.shot_ids]
            prompts.extend(
                VariantPrompt(variant, item_prompts(shown, shots, p.k_shot, ("mcp",), plan.tolerance))
                for variant, shown in expand_mcq_item(p.item, settings))
    return CircularPlan(plan.dataset, settings, plan.k_shots if prompts else (), tuple(prompts),
                        circular_notes(plan.methods))


# ------------------------------------------------------------------------ scoring


def score_variant(vp: VariantPrompt, result: EngineResult) -> VariantResult:
    """The MCP rule on one variant: the displayed letter, or None with the reason."""
    [pred] = mcp_predictions(vp.prompts, result, tolerance=False)
    letter = None if pred.prediction is None else vp.variant.shown[pred.prediction]
    reason = result.error or (None if letter is not None else "no log-probability for every letter")
    return VariantResult.of(vp.variant, letter, reason)


def score_circular(plan: CircularPlan, options: Mapping[str, EngineResult]) -> dict[int, list[VariantResult]]:
    """Variant results per k, in plan order (variants of one item adjacent)."""
    by_k: dict[int, list[VariantResult]] = {k: [] for k in plan.k_shots}
    for vp in plan.prompts:
        by_k[vp.prompts.k_shot].append(score_variant(vp, options[vp.prompts.mcp.key]))
    return by_k


# -------------------------------------------------------------------------- files


@dataclass(frozen=True)
class CircularReport:
    """What the circular part of a run wrote; ``payload`` goes into ``<dataset>_results.json``."""

    payload: dict[str, Any]
    table_md: Path | None
    table_csv: Path | None

    @property
    def notes(self) -> list[str]:
        return list(self.payload["notes"])


def circular_name(dataset: str, k: int) -> str:
    """The files' stem and the summary table's row: ``<dataset>_mcp_k<k>``."""
    return f"{dataset}_mcp_k{k}"


def write_mcq_circular(output_dir: str | os.PathLike[str], model: str, plan: CircularPlan,
                       results: Mapping[int, Sequence[VariantResult]]) -> CircularReport:
    """Per k the variants JSONL and metrics JSON; the summary table over k (none without MCP)."""
    folder = mcq_dir(output_dir, model)
    settings = plan.settings
    by_k: dict[str, Any] = {}
    table_rows: dict[str, dict[str, float]] = {}
    for k in plan.k_shots:
        name = circular_name(plan.dataset, k)
        jsonl, metrics, scores = write_circular_files(folder, name, results[k], settings,
                                                      dataset=plan.dataset, model=model, method="MCP", k_shot=k)
        table_rows[name] = scores.metrics
        by_k[str(k)] = {"questions": scores.questions, "variants": scores.variants,
                        "sampled_questions": scores.sampled_questions, "metrics": scores.metrics,
                        "files": {"variants": str(jsonl), "metrics": str(metrics)}}
    md = csv = None
    if table_rows:
        table = circular_table({model: table_rows}, default_metric_types(settings.mode),
                               modes={name: TABLE_MODE for name in table_rows})
        md, csv = write_circular_table(folder, table, stem=f"{plan.dataset}_circular_summary")
    payload = {"mode": settings.mode, "max_variants": settings.max_variants, "seed": settings.seed,
               "method": "MCP" if by_k else None, "notes": list(plan.notes), "scale": "fraction",
               "k": by_k, "table": {"markdown": str(md), "csv": str(csv)} if md else None}
    return CircularReport(payload, md, csv)
