"""Circular-evaluation metrics, as OpenCompass's ``CircularEvaluator`` defines them.

For each pattern family ``k`` in {origin, circular, all_possible, sampled} (all_possible
only when that mode was run, sampled only when some question's orders were a seeded
sample), over the variants whose pattern belongs to ``k``:

* ``acc_k``: accuracy with every variant scored as a separate question;
* ``more_N_k``: share of questions with at least N of their ``k`` variants right, for
  N = 1 .. (variants in ``k``) - 1;
* ``perf_k``: share of questions with every ``k`` variant right ("perfect");
* ``vote_k``: share of questions whose majority answer, mapped back to the original
  labels, is the gold option. Ties go to the answer seen first, in the order the variants
  are given (``Counter.most_common``, as in OpenCompass); an unreadable answer is a vote
  for "-" and can win.

Per question the families are: origin = the identity order (found by value, never by
position), circular = the rotations of the origin, all_possible = every one of the n!
orders, sampled = the seeded sample of orders asked instead (``--max_variants``; it always
holds the n rotations). A question enters ``k`` only if all of its ``k`` patterns were run:
a sampled question is in origin, circular and sampled, never in all_possible, so
``perf_sampled`` (all *sampled* orders right, an upper bound of perf over all orders) is
never read as ``perf_all_possible``. Values are fractions in [0, 1] (OpenCompass
prints percentages; the summary table does too); a family with no question gives NaN.
Items may have different option counts; ``more_N_k`` then runs to the largest count - 1,
and a question with fewer variants than N cannot reach it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from socbench.circular import rotations
from socbench.types import CircularMode, CircularScores, CircularSettings, ScoredDomain, VariantResult

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
    """The question's variants in ``family`` and the family's size, or None if one is missing.

    Every pattern is a checked, distinct order of the origin, so all_possible needs no
    listing of the n! orders: it holds the whole group when that has n! unsampled orders;
    sampled holds the whole group when its orders were sampled.
    """
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
    metrics = {f"acc_{family}": _share([result.correct for result in variants])}
    for n in range(1, largest):
        metrics[f"more_{n}_{family}"] = _share([count >= n for count in right])
    metrics[f"perf_{family}"] = _share([count == size for count, (_, size) in zip(right, entered)])
    metrics[f"vote_{family}"] = _share([vote_right(members) for members, _ in entered])
    return metrics, len(entered), len(variants)


def circular_metrics(results: Sequence[VariantResult], mode: CircularMode) -> CircularScores:
    """All metrics of one run, keys in OpenCompass's order (acc, then more/perf, then vote)."""
    groups = group_by_question(results)
    sampled = any(result.sampled for result in results)
    per_family = {family: family_metrics(groups, family)
                  for family in families(mode) + ((SAMPLED,) if sampled else ())}
    metrics: dict[str, float] = {}
    for prefix in ("acc_", "more_", "vote_"):
        for values, _, _ in per_family.values():
            metrics.update({name: value for name, value in values.items()
                            if name.startswith(prefix) or (prefix == "more_" and name.startswith("perf_"))})
    return CircularScores(
        metrics=metrics,
        questions={family: entered for family, (_, entered, _) in per_family.items()},
        variants={family: n for family, (_, _, n) in per_family.items()},
        sampled_questions=sum(any(r.sampled for r in group) for group in groups.values()),
    )


# ------------------------------------------------------------------------- reducer


def reduce_domain(scored: ScoredDomain, settings: CircularSettings | None) -> ScoredDomain:
    """OpenCompass's metrics over the scored variants grouped by item; the run's family
    (``circular_acc/perf/vote``) joins the domain's metrics. An incomplete domain, or a run
    without circular evaluation, is returned as is."""
    if settings is None or scored.variants is None or not scored.result.complete:
        return scored
    scores = circular_metrics(scored.variants or (), settings.mode)
    metrics = {**scored.result.metrics, **circular_extras(scores.metrics, settings)}
    return replace(scored, result=replace(scored.result, metrics=metrics), circular_scores=scores)


def circular_extras(metrics: Mapping[str, float], settings: CircularSettings) -> dict[str, float]:
    """The circular metrics an ISSP domain adds to its own: acc/perf/vote of the run's family
    (``circular_*``, ``circular_relabel_*``) and, over sampled orders, ``*_sampled_*``."""
    prefix = "circular_relabel" if settings.labels == "relabel" else "circular"
    extra = {f"{prefix}_{name}": metrics[f"{name}_{settings.mode}"] for name in ("acc", "perf", "vote")}
    extra.update({f"{prefix}_sampled_{name}": metrics[f"{name}_sampled"] for name in ("acc", "perf", "vote")
                  if f"{name}_sampled" in metrics})
    return extra
