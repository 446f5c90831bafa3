"""Persona groups (sex, age group, education, religion, party, employment) from respondent attributes. A study
that declares its roles is grouped by exactly those; otherwise keys are recognised as ISSP codebook labels,
which differ by module, so patterns are tried in priority order per respondent (a missing preferred variable
falls back to the next; spouse, household and country-specific education never count).

A survey's categories are its own: outside ISSP data (``DomainSpec.issp_vocabulary``) a group is the source's
value label verbatim, never renamed, merged or re-banded; only a raw numeric age is banded (``AGE_BANDS``, as
the import report says). ISSP data maps its modules' labels onto a few comparable groups (``_VALUE_RULES``,
ages by their first number); a label no rule knows is kept (cleaned), so it shows up instead of vanishing.

Persona vs no persona (``persona_effect``): did describing the respondent help? Persona prompting often does
not, and can hurt under-represented groups (WVS persona study, 2026), so a persona run is read against the
same model's ``--no_persona`` run, paired by (respondent, question), overall and per persona group: "helped"
when the difference's CI lies above 0, "hurt" when below."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import numpy as np

from socbench.data.missing_labels import is_missing_label
from socbench.metrics.grouped import group_rows, split_index
from socbench.metrics.uncertainty import PairedComparison, paired_comparison
from socbench.types import Respondent, ScoredItem

SEX, AGE_GROUP, EDUCATION, RELIGION, EMPLOYMENT = "sex", "age_group", "education", "religion", "employment"
PARTY = "party"
ATTRIBUTES = (SEX, AGE_GROUP, EDUCATION, RELIGION, PARTY, EMPLOYMENT)
ROLE_ATTRIBUTE = {"age": AGE_GROUP}  # a role's persona group, where the names differ
UNKNOWN = "unknown"
AGE_BANDS = ((15, 29, "15-29"), (30, 44, "30-44"), (45, 59, "45-59"), (60, 130, "60+"))
_RAW_AGE = re.compile(r"\d+(?:\.\d*)?")  # an unlabelled number ("84", "84.0", "30.5"): socbench bands it
_BELOW = re.compile(r"^(?:under|less than|younger than|below|up to|<)", re.IGNORECASE)

# Per attribute: key patterns, highest priority first, searched in the lower-cased key; (value pattern,
# group) rules, the first match wins. Package data: a table, not code.
_RULES = json.loads(files("socbench.metrics").joinpath("persona_groups.json").read_text(encoding="utf-8"))
_VALUE_RULES: dict[str, list[list[str]]] = _RULES["values"]
_COMPILED = {attr: tuple(re.compile(p) for p in pats) for attr, pats in _RULES["keys"].items()}
_EXCLUDED_KEY = re.compile(r"spouse|partner|mother|father|parent|child|household|country specific highest")


@functools.lru_cache(maxsize=1 << 14)
def classify_key(key: str) -> tuple[str, int] | None:
    """``(attribute, priority)`` of an attribute key (0 = preferred), or None."""
    text = " ".join(key.lower().split())
    found = ((attribute, priority) for attribute, patterns in _COMPILED.items()
             for priority, pattern in enumerate(patterns) if pattern.search(text))
    return None if _EXCLUDED_KEY.search(text) else next(found, None)


_COUNTRY_NOTE = re.compile(r"[,;]\s*[A-Z]{2}(?:-[A-Z]{1,3})?(?:\s*,\s*[A-Z]{2}(?:-[A-Z]{1,3})?)*\s*:.*$")


def clean_label(value: str) -> str:
    """A value label without country notes ("; NZ: ...", ", HR: incl ...") or trailing commas."""
    text = _COUNTRY_NOTE.sub("", " ".join(str(value).split()))
    return text.split(";")[0].strip().rstrip(",.").strip()


def age_group(value: str) -> str | None:
    """"47 years", "15 years old", "89 years old; US: 89 years or more", "45" -> an age band."""
    match = re.search(r"\d+", str(value))
    if match is None:
        return None
    age = int(match.group())
    if age < AGE_BANDS[0][0]:
        return f"under {AGE_BANDS[0][0]}"
    return next((label for low, high, label in AGE_BANDS if low <= age <= high), None)


def age_order(label: str) -> float | None:
    """Where an age group's label sits among the ages, for "youngest" and "oldest": its first number
    ("(59,Inf]" -> 59, "65+" -> 65), a little lower for "under 15" / "less than 18"; None without one."""
    match = re.search(r"\d+", str(label))
    if match is None:
        return None
    return int(match.group()) - (0.5 if _BELOW.match(str(label).strip()) else 0.0)


@functools.lru_cache(maxsize=1 << 14)
def group_of(attribute: str, value: str, issp: bool = True) -> str | None:
    """The group of one attribute value; None for a missing value or an unreadable age. ``issp`` False:
    the value itself (a raw numeric age in ``AGE_BANDS``)."""
    if is_missing_label(value):
        return None
    if not issp:
        text = " ".join(str(value).split())
        return age_group(text) if attribute == AGE_GROUP and _RAW_AGE.fullmatch(text) else text or None
    if attribute == AGE_GROUP:
        return age_group(value)
    label = clean_label(value)
    lowered = label.lower()
    for pattern, group in _VALUE_RULES.get(attribute, ()):
        if re.search(pattern, lowered):
            return group
    return label or None


def _declared(attributes: Mapping[str, str], roles: Mapping[str, str]) -> dict[str, list[tuple[int, str]]]:
    """The declared roles' keys as found in ``attributes`` (case- and space-insensitively)."""
    keys = {" ".join(key.split()).lower(): key for key in attributes}
    found = {ROLE_ATTRIBUTE.get(role, role): " ".join(key.split()).lower() for role, key in roles.items()}
    return {attribute: [(0, keys[norm])] for attribute, norm in found.items()
            if attribute in ATTRIBUTES and norm in keys}


def persona_groups(attributes: Mapping[str, str], roles: Mapping[str, str] | None = None,
                   issp: bool = True) -> dict[str, str]:
    """``{attribute: group}`` for the persona attributes this respondent has: the declared ``roles``
    (role -> attribute key), else recognised keys in priority order; ``issp``: in ISSP's words."""
    declared = any(ROLE_ATTRIBUTE.get(role, role) in ATTRIBUTES for role in roles or ())
    ranked = _declared(attributes, roles or {}) if declared else {}
    for key in () if declared else attributes:
        found = classify_key(key)
        if found is not None:
            ranked.setdefault(found[0], []).append((found[1], key))
    groups: dict[str, str] = {}
    for attribute in ATTRIBUTES:
        for _, key in sorted(ranked.get(attribute, [])):
            group = group_of(attribute, str(attributes[key]), issp)
            if group is not None:
                groups[attribute] = group
                break
    return groups


def respondent_groups(respondents: Iterable[Respondent], roles: Mapping[str, str] | None = None,
                      issp: bool = True) -> dict[int, dict[str, str]]:
    """``{person_id: persona groups}`` for ``score_domain`` to attach to the scored items."""
    return {person.person_id: persona_groups(person.attributes, roles, issp) for person in respondents}


def persona_breakdowns(items: Sequence[ScoredItem], expected: Mapping[str, np.ndarray],
                       ) -> dict[str, dict[str, dict[str, Any]]]:
    """``{attribute: {group: group_row}}`` for attributes any item has; a respondent without it is
    ``unknown`` (``expected``: ``metrics.baselines.item_baselines(items)``)."""
    return {attr: group_rows(items, _group_of(attr), expected) for attr in _present(items)}


def _present(items: Sequence[ScoredItem]) -> list[str]:
    """The persona attributes any item has."""
    return [attr for attr in ATTRIBUTES if any(attr in item.groups for item in items)]


def _group_of(attribute: str) -> Callable[[ScoredItem], str]:
    return lambda item: item.groups.get(attribute, UNKNOWN)


@dataclass(frozen=True)
class PersonaEffect:
    """Persona minus no persona on the shared items, overall and per persona group."""
    overall: PairedComparison  # its words: ``verdict``
    groups: dict[str, dict[str, PairedComparison]]  # attribute -> group -> comparison


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
    """Compare a persona run with the same model's no-persona run on their shared items (an item of one run
    only is not compared)."""
    by_key = {(i.person_id, i.question_id): i for i in no_persona}
    pairs = [(i, by_key[key]) for i in persona if (key := (i.person_id, i.question_id)) in by_key]
    if not pairs:
        raise ValueError("the persona and no-persona runs share no (respondent, question) item")
    overall, shown = _compare(pairs, seed), [a for a, _ in pairs]
    groups = {attribute: {name: _compare([pairs[i] for i in index], seed)
                          for name, index in split_index(shown, _group_of(attribute)).items()}
              for attribute in _present(shown)}
    return PersonaEffect(overall, groups)
