"""Persona vs no persona: did describing the respondent help? Persona prompting often does not, and can hurt
under-represented groups (WVS persona study, 2026), so a persona run is read against the same model's
``--no_persona`` run, paired by (respondent, question), overall and per persona group: "helped" when the
difference's CI lies above 0, "hurt" when below."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.metrics.uncertainty import PairedComparison, paired_comparison
from socbench.types import ScoredItem


@dataclass(frozen=True)
class PersonaEffect:
    """Persona minus no persona on the shared items, overall and per persona group."""
    overall: PairedComparison
    verdict: str
    groups: dict[str, dict[str, PairedComparison]]  # attribute -> group -> comparison
    only_persona: int  # items in the persona run only (not compared)
    only_no_persona: int


def _paired(persona: Sequence[ScoredItem], control: Sequence[ScoredItem]
            ) -> tuple[list[tuple[ScoredItem, ScoredItem]], int, int]:
    by_key = {(i.person_id, i.question_id): i for i in control}
    pairs = [(i, by_key[key]) for i in persona if (key := (i.person_id, i.question_id)) in by_key]
    return pairs, len(persona) - len(pairs), len(control) - len(pairs)


def _compare(pairs: Sequence[tuple[ScoredItem, ScoredItem]], seed: int) -> PairedComparison:
    return paired_comparison([a.correct for a, _ in pairs], [b.correct for _, b in pairs],
                             [a.person_id for a, _ in pairs], seed=seed)


def verdict(comparison: PairedComparison) -> str:
    """"the persona helped: +0.05 [0.02, 0.08], McNemar p = 0.003" (or hurt / no clear difference)."""
    low, high = comparison.difference_ci
    word = ("the persona helped" if low > 0 else "the persona hurt" if high < 0
            else "no clear difference with or without the persona")
    ci = "" if math.isnan(low) else f" [{low:+.2f}, {high:+.2f}]"
    return f"{word}: {comparison.difference:+.2f}{ci}, McNemar p = {comparison.mcnemar_p:.3g}"


def persona_effect(persona: Sequence[ScoredItem], no_persona: Sequence[ScoredItem], *,
                   seed: int = 0) -> PersonaEffect:
    """Compare a persona run with the same model's no-persona run on their shared items."""
    pairs, only_persona, only_control = _paired(persona, no_persona)
    if not pairs:
        raise ValueError("the persona and no-persona runs share no (respondent, question) item")
    overall = _compare(pairs, seed)
    groups: dict[str, dict[str, PairedComparison]] = {}
    for attribute in ATTRIBUTES:
        if not any(attribute in a.groups for a, _ in pairs):
            continue
        split: dict[str, list[tuple[ScoredItem, ScoredItem]]] = {}
        for pair in pairs:
            split.setdefault(pair[0].groups.get(attribute, UNKNOWN), []).append(pair)
        groups[attribute] = {name: _compare(split[name], seed) for name in sorted(split)}
    return PersonaEffect(overall, verdict(overall), groups, only_persona, only_control)
