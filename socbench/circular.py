"""Circular evaluation (OpenCompass's CircularEval): re-ask a multiple-choice item with its options
reordered; an item counts as solved only if every order is answered right. ``circular``: the n rotations;
``all_possible``: all n! orders (n > 5 needs ``max_variants``: the rotations plus a seeded sample, the
``sampled`` family). Every item keeps its own labels and count; nothing assumes A-D.

A *pattern* is the original labels in displayed order; the identity variant (``pattern == origin``) is
found by value, never by position. ``keep_labels=False`` (ARC, ``--circular_labels relabel``) remaps the
gold label (label and order bias); ``keep_labels=True`` (ISSP's ``order_only``) keeps each code with its
text (order bias alone). A variant's id is ``"<qid>--<pattern>"``; the normal prompt's ``request_id`` is
the plain qid, so it shares the non-circular request's cache entry and score.

Metrics per family (OpenCompass's ``CircularEvaluator``): ``acc``, ``more_N``, ``perf`` (all right) and
``vote`` (the mapped-back majority is gold). A question enters a family only if all its patterns ran, so
``perf_sampled`` (an upper bound) is never read as ``perf_all_possible``; an empty family gives NaN.
MCP items are labelled by position (A, B, ...); CP is not expanded (``CP_SKIPPED``).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from socbench.errors import ConfigError, DataError
from socbench.shuffle import display_order, order_seed
from socbench.types import (
    CircularMode,
    CircularScores,
    CircularSettings,
    Item,
    Pattern,
    ScoredDomain,
    Variant,
    VariantResult,
)

MAX_ALL_POSSIBLE_OPTIONS = 5  # 5! = 120 orders; 6! = 720 needs an explicit --max_variants
_ENUMERATE_LIMIT = 40_320  # up to 8! orders are listed and sampled; beyond, drawn one by one


def rotations(labels: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The n rotations, identity first (OpenCompass's ``get_circular_patterns``)."""
    doubled = tuple(labels) * 2
    return [doubled[i:i + len(labels)] for i in range(len(labels))]


def sampled_orders(labels: Sequence[str], count: int, seed: int, qid: str) -> list[Pattern]:
    """The n rotations (identity first) plus ``count - n`` other orders seeded by (seed, qid)."""
    n = len(labels)
    turns = rotations(range(n))
    rng = random.Random(order_seed(seed, "circular-sample", qid))
    wanted = max(0, count - n)
    if math.factorial(n) <= _ENUMERATE_LIMIT:
        others = [p for p in itertools.permutations(range(n)) if p not in set(turns)]
        picks = rng.sample(others, min(wanted, len(others)))
    else:
        seen, picks = set(turns), []
        while len(picks) < wanted:
            order = tuple(rng.sample(range(n), n))
            if order not in seen:
                seen.add(order)
                picks.append(order)
    return [tuple(labels[i] for i in p) for p in turns + sorted(picks)]


def variant_patterns(labels: Sequence[str], settings: CircularSettings,
                     qid: str = "") -> tuple[list[Pattern], bool]:
    """The patterns of one item and whether they are a seeded sample (never fewer than its rotations)."""
    if settings.mode == "circular":
        return rotations(labels), False
    n, total = len(labels), math.factorial(len(labels))
    if settings.max_variants is not None and max(settings.max_variants, n) < total:
        return sampled_orders(labels, settings.max_variants, settings.seed, qid), True
    if n > MAX_ALL_POSSIBLE_OPTIONS and settings.max_variants is None:
        raise ConfigError(f"--circular all_possible: item {qid} has {n} options ({total} orders); "
                          "pass --max_variants N to ask its rotations and a seeded sample of other orders "
                          "(N in all), or use --circular circular")
    return list(itertools.permutations(labels)), False  # identity first, as get_all_possible_patterns


def expand_item(qid: str, options: Sequence[tuple[str, str]], gold: str, settings: CircularSettings, *,
                keep_labels: bool = False, positions: Sequence[str] | None = None) -> list[Variant]:
    """All variants of one item (``options``: (label, text) in original order), gold remapped; without
    ``keep_labels`` the positions show ``positions`` (default: the original labels in order)."""
    labels = tuple(label for label, _ in options)
    if len(set(labels)) != len(labels) or not labels:
        raise DataError(f"item {qid}: option labels {list(labels)} are empty or repeated")
    if gold not in labels:
        raise DataError(f"item {qid}: gold {gold!r} is not one of its options {list(labels)}")
    texts, fixed = dict(options), None if keep_labels else tuple(positions or labels)
    patterns, sampled = variant_patterns(labels, settings, qid)
    return [Variant(qid=qid, pattern=p, shown=fixed or p, origin=labels, gold=(fixed or p)[p.index(gold)],
                    texts=tuple(texts[label] for label in p), sampled=sampled) for p in patterns]


def issp_variants(item: Item, settings: CircularSettings) -> list[Variant]:
    """Variants of one scoreable ISSP item; the origin is the order that respondent is shown."""
    if item.true_code is None:
        raise ValueError(f"item {item.item_id} has no true code; only scoreable items have variants")
    order = display_order(item.offered_codes, settings.shuffle_options, settings.seed,
                          item.person_id, item.question_id)
    labels = dict(item.options)
    relabel = settings.labels == "relabel"
    return expand_item(item.item_id, [(code, labels[code]) for code in order], item.true_code, settings,
                       keep_labels=not relabel,
                       positions=[str(i) for i in range(1, len(order) + 1)] if relabel else None)


CP_SKIPPED = ("circular: CP skipped (a cloze prompt does not show the other options, "
              "so their order cannot change its answer); circular metrics are for MCP")
NO_MCP = "circular: nothing to expand, MCP was not run (add mcp to --method)"


def circular_notes(methods: Sequence[str]) -> tuple[str, ...]:
    """What a circular run leaves out, one line each (printed, logged, in the results JSON)."""
    return ((CP_SKIPPED,) if "cp" in methods else ()) + (() if "mcp" in methods else (NO_MCP,))


def circular_name(dataset: str, k: int) -> str:
    """The files' stem and the summary table's row: ``<dataset>_mcp_k<k>``."""
    return f"{dataset}_mcp_k{k}"


FAMILIES: tuple[str, ...] = ("origin", "circular", "all_possible")
SAMPLED = "sampled"
UNREADABLE = "-"  # OpenCompass's vote for an answer that is not an option


def families(mode: CircularMode) -> tuple[str, ...]:
    """The pattern families a run in ``mode`` reports."""
    return FAMILIES if mode == "all_possible" else FAMILIES[:2]


def group_by_question(results: Sequence[VariantResult]) -> dict[str, list[VariantResult]]:
    """Variants by qid, in first-seen order; a repeated pattern or a foreign order is a bug."""
    groups: dict[str, list[VariantResult]] = {}
    for result in results:
        group = groups.setdefault(result.qid, [])
        if group and (group[0].origin != result.origin or group[0].gold_original != result.gold_original):
            raise ValueError(f"question {result.qid}: variants disagree on the original options or gold")
        if sorted(result.pattern) != sorted(result.origin):
            raise ValueError(f"question {result.qid}: pattern {result.pattern} "
                             f"is not an order of {result.origin}")
        if any(other.pattern == result.pattern for other in group):
            raise ValueError(f"question {result.qid}: pattern {result.pattern} given twice")
        group.append(result)
    return groups


def _members(group: Sequence[VariantResult], family: str) -> tuple[list[VariantResult], int] | None:
    """The question's variants in ``family`` and the family's size, or None if one is missing. Patterns
    are checked distinct orders, so all_possible is the whole group when it has n! unsampled ones."""
    origin = group[0].origin
    sampled = any(result.sampled for result in group)
    if family in ("all_possible", SAMPLED):
        size = len(group) if sampled else math.factorial(len(origin))
        return (list(group), size) if len(group) == size and sampled == (family == SAMPLED) else None
    wanted = {origin} if family == "origin" else set(rotations(origin))
    members = [result for result in group if result.pattern in wanted]
    return (members, len(wanted)) if len(members) == len(wanted) else None


def vote_right(members: Sequence[VariantResult]) -> bool:
    """The most common mapped-back answer (first seen wins a tie) is the gold option."""
    votes = Counter(result.to_original(result.prediction) or UNREADABLE for result in members)
    return votes.most_common(1)[0][0] == members[0].gold_original


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def family_metrics(groups: dict[str, list[VariantResult]], family: str) -> tuple[dict[str, float], int, int]:
    """acc, more_N, perf and vote of one family; also how many questions and variants entered."""
    entered = [m for m in (_members(group, family) for group in groups.values()) if m is not None]
    variants = [result for members, _ in entered for result in members]
    right = [sum(result.correct for result in members) for members, _ in entered]
    largest = max((size for _, size in entered), default=1)
    metrics = {f"acc_{family}": _share([result.correct for result in variants]),
               **{f"more_{n}_{family}": _share([count >= n for count in right]) for n in range(1, largest)},
               f"perf_{family}": _share([count == size for count, (_, size) in zip(right, entered)]),
               f"vote_{family}": _share([vote_right(members) for members, _ in entered])}
    return metrics, len(entered), len(variants)


def circular_metrics(results: Sequence[VariantResult], mode: CircularMode) -> CircularScores:
    """All metrics of one run, keys in OpenCompass's order (acc, then more/perf, then vote)."""
    groups = group_by_question(results)
    sampled = any(result.sampled for result in results)
    per_family = {family: family_metrics(groups, family)
                  for family in families(mode) + ((SAMPLED,) if sampled else ())}
    rank = {"acc": 0, "more": 1, "perf": 1, "vote": 2}  # a stable sort keeps the families' order in each
    pairs = [pair for values, _, _ in per_family.values() for pair in values.items()]
    metrics = dict(sorted(pairs, key=lambda pair: rank[pair[0].split("_")[0]]))
    return CircularScores(metrics=metrics, questions={f: n for f, (_, n, _) in per_family.items()},
                          variants={f: n for f, (_, _, n) in per_family.items()},
                          sampled_questions=sum(any(r.sampled for r in group) for group in groups.values()))


def reduce_domain(scored: ScoredDomain, settings: CircularSettings | None) -> ScoredDomain:
    """OpenCompass's metrics over the variants; the run's family joins the domain's metrics: its acc, perf
    and vote as ``circular_*`` (``circular_relabel_*``), a seeded sample's as ``circular_sampled_*``. An
    incomplete domain, or a run without circular evaluation, is returned as is."""
    if settings is None or scored.variants is None or not scored.result.complete:
        return scored
    scores = circular_metrics(scored.variants, settings.mode)
    prefix = "circular_relabel" if settings.labels == "relabel" else "circular"
    extra = {f"{prefix}_{'sampled_' * (family == SAMPLED)}{name}": scores.metrics[f"{name}_{family}"]
             for family in (settings.mode, SAMPLED) for name in ("acc", "perf", "vote")
             if f"{name}_{family}" in scores.metrics}
    metrics = {**scored.result.metrics, **extra}
    return replace(scored, result=replace(scored.result, metrics=metrics), circular_scores=scores)
