"""What a domain's manifest entry changes when its files are read.

Why: a non-ISSP study names its own country attribute, persona attributes and missing codes;
applied at the file boundary (``loaders``), so prompts, scoring and reports need no change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from socbench.data.countries import country_attribute_key
from socbench.manifest import AUTO_COUNTRY
from socbench.types import Question


def _norm(key: str) -> str:
    return " ".join(str(key).split()).lower()


def country_key_function(country_attribute: str | None) -> Callable[[Mapping[str, object]], str | None]:
    """How to find the country attribute: ``"auto"`` the ISSP country table by its label; None no
    country; otherwise that key, matched case- and space-insensitively."""
    if country_attribute == AUTO_COUNTRY:
        return country_attribute_key
    if country_attribute is None:
        return lambda attributes: None
    wanted = _norm(country_attribute)

    def named(attributes: Mapping[str, object]) -> str | None:
        if country_attribute in attributes:
            return country_attribute
        return next((key for key in attributes if _norm(key) == wanted), None)

    return named


def persona_filter(
    include: Iterable[str], exclude: Iterable[str], country_attribute: str | None
) -> Callable[[str], bool]:
    """Whether an attribute stays in the persona; a named country attribute is dropped (the persona
    shows it as "Country", never twice)."""
    keep = {_norm(k) for k in include}
    drop = {_norm(k) for k in exclude}
    if country_attribute not in (None, AUTO_COUNTRY):
        drop.add(_norm(country_attribute))

    def kept(key: str) -> bool:
        norm = _norm(key)
        return norm not in drop and (not keep or norm in keep)

    return kept


def apply_missing_codes(questions: tuple[Question, ...], missing: Iterable[str]) -> tuple[Question, ...]:
    """Questions with the manifest's ``missing_codes`` (the user's override) taken out of their options
    and made missing codes of every question, each option label kept as the reason."""
    codes = [str(code) for code in missing]
    if not codes:
        return questions

    def strip(options: Mapping[str, str]) -> dict[str, str]:
        return {code: label for code, label in options.items() if code not in codes}

    def declared(q: Question) -> dict[str, str]:
        labels = {**{c: label for o in q.special.values() for c, label in o.items()}, **q.options}
        return {**q.missing, **{c: labels.get(c, f"{c}, manifest missing_codes") for c in codes}}

    return tuple(
        replace(q, options=strip(q.options), special={c: strip(o) for c, o in q.special.items()},
                missing=declared(q))
        for q in questions
    )
