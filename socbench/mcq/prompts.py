"""Cloze (CP) and multiple-choice (MCP) prompts, k-shot, as engine requests.

CP is lm-evaluation-harness's ARC task exactly; CP-UN scores the same continuation after the neutral
context ``Answer:`` (as OLMES does). MCP letters the options by position and reads the next-token
log-probability of `` A``, `` B``, ... (``answer_prefix=" "``: the engine scores ``ĠA``, the token that
follows ``Answer:`` in real text; ``A`` glued to the colon is a rare one); with tolerance the digits
`` 1``, `` 2``, ... too. Shots come from another split, seeded by ``(seed, item id)``, never the item
itself; the k=1 shot is the first of the k=5 shots.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from socbench.circular import expand_item
from socbench.errors import ConfigError
from socbench.mcq.datasets import letters
from socbench.mcq.mcq_types import ItemPrompts, McqData, McqItem, McqPlan
from socbench.types import CircularSettings, LoglikelihoodRequest, Message, PromptRequest

UNCONDITIONAL_CONTEXT = "Answer:"
SHOT_SEPARATOR = "\n\n"
MCP_ANSWER_PREFIX = " "
MAX_SHOTS = 25  # one seeded draw of this many per item; k shots are its first k


def digits(n: int) -> tuple[str, ...]:
    return tuple(str(i + 1) for i in range(n))


def cp_query(item: McqItem) -> str:
    return f"Question: {item.question}\nAnswer:"


def cp_continuation(text: str) -> str:
    return f" {text}"


def mcp_query(item: McqItem) -> str:
    """Question and lettered options; an option is one line (a raw newline would break the list)."""
    options = "".join(f"{letter}. {' '.join(text.split())}\n"
                      for letter, text in zip(letters(len(item.choices)), item.texts))
    return f"Question: {item.question}\n{options}Answer:"


def cp_context(item: McqItem, shots: Sequence[McqItem]) -> str:
    examples = "".join(cp_query(s) + cp_continuation(s.gold_text) + SHOT_SEPARATOR for s in shots)
    return examples + cp_query(item)


def mcp_prompt(item: McqItem, shots: Sequence[McqItem]) -> str:
    return "".join(f"{mcp_query(s)}{MCP_ANSWER_PREFIX}{letters(len(s.choices))[s.gold]}{SHOT_SEPARATOR}"
                   for s in shots) + mcp_query(item)


def draw_shots(item: McqItem, candidates: Sequence[McqItem], k: int, seed: int) -> tuple[McqItem, ...]:
    """k examples for ``item``: seeded by (seed, item id), never the item itself (same id or question)."""
    if k == 0:
        return ()
    eligible = [c for c in candidates if c.id != item.id and c.question != item.question]
    if len(eligible) < k:
        raise ConfigError(f"--k_shot {k}: only {len(eligible)} few-shot examples for item {item.id}")
    return tuple(random.Random(f"{seed}|{item.id}").sample(eligible, min(MAX_SHOTS, len(eligible)))[:k])


def item_prompts(item: McqItem, shots: Sequence[McqItem], k: int, methods: Sequence[str],
                 tolerance: bool) -> ItemPrompts:
    cp = uncond = ()
    if "cp" in methods:
        context = cp_context(item, shots)
        cp = tuple(LoglikelihoodRequest(context, cp_continuation(t)) for t in item.texts)
        uncond = tuple(LoglikelihoodRequest(UNCONDITIONAL_CONTEXT, cp_continuation(t)) for t in item.texts)
    n, mcp = len(item.choices), None
    if "mcp" in methods:
        mcp = PromptRequest(item_id=f"{item.id}#k{k}", messages=(Message("user", mcp_prompt(item, shots)),),
                            mode="logprobs", offered_codes=letters(n) + (digits(n) if tolerance else ()),
                            option_order=letters(n), answer_prefix=MCP_ANSWER_PREFIX, chat=False)
    return ItemPrompts(item, k, tuple(s.id for s in shots), cp, uncond, mcp)


def variant_prompts(item: McqItem, shots: Sequence[McqItem], k: int, tolerance: bool,
                    settings: CircularSettings) -> list[ItemPrompts]:
    """The MCP request of every circular variant of (item, k), with that (item, k)'s shots: the item as
    displayed (labelled by position, as MCP shows it), gold remapped."""
    keys = letters(len(item.choices))
    variants = expand_item(item.id, tuple(zip(keys, item.texts, strict=True)), keys[item.gold], settings)
    shown = [replace(item, id=v.request_id, choices=v.options, gold=v.shown.index(v.gold)) for v in variants]
    return [replace(item_prompts(one, shots, k, ("mcp",), tolerance), variant=variant)
            for variant, one in zip(variants, shown)]


def build_plan(data: McqData, methods: Sequence[str], k_shots: Sequence[int], tolerance: bool,
               seed: int, circular_settings: CircularSettings | None = None) -> McqPlan:
    """Requests for every (item, k), shots drawn from ``data.fewshot_pool``; with
    ``circular_settings`` also every MCP variant (``socbench.circular``)."""
    pools: dict[str | None, list[McqItem]] = {None: list(data.fewshot_pool)}  # MMLU: a subject's own
    for example in data.fewshot_pool:
        if example.subject is not None:
            pools.setdefault(example.subject, []).append(example)
    top = max(k_shots, default=0)
    drawn = [draw_shots(item, pools.get(item.subject, []), top, seed) if top else () for item in data.items]
    asked = [(item, shots[:k], k) for item, shots in zip(data.items, drawn) for k in k_shots]
    variants = [v for one in asked for v in variant_prompts(*one, tolerance, circular_settings)] \
        if circular_settings is not None and "mcp" in methods else []
    return McqPlan(data.dataset, tuple(methods), tuple(k_shots), tolerance, seed,
                   tuple(item_prompts(*one, methods, tolerance) for one in asked), circular_settings,
                   tuple(variants))


def loglikelihood_requests(plan: McqPlan) -> list[LoglikelihoodRequest]:
    """Unique by key (CP-UN's requests are shared by every k)."""
    return list({r.key: r for p in plan.prompts for r in (*p.cp, *p.uncond)}.values())


def option_requests_of(plan: McqPlan) -> list[PromptRequest]:
    """Unique by key: an identity variant's request is the normal MCP request."""
    return list({p.mcp.key: p.mcp for p in (*plan.prompts, *plan.variants) if p.mcp is not None}.values())
