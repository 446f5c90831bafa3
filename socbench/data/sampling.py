"""Country-stratified, reproducible, nested respondent samples.

A seeded round-robin over seeded per-country permutations: per-country counts differ by at most
one, the same seed gives the same sample, and a smaller sample is a prefix of every larger one.
"""

from __future__ import annotations

import hashlib
import sys
from collections import defaultdict
from collections.abc import Sequence
from itertools import zip_longest
from typing import Protocol, TypeVar

import numpy as np

from socbench.errors import ConfigError

SAMPLE_SEED = 42


class _Person(Protocol):
    person_id: int
    country_code: str | None
    country_name: str | None


P = TypeVar("P", bound=_Person)


def stratum(person: _Person) -> str:
    """The stratum of a respondent: its group (a grouping variable that is not a country), else its
    country code, else its country name as written."""
    return getattr(person, "group", None) or person.country_code or person.country_name or "(unknown)"


def _rng(seed: int, label: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def draw_order(respondents: Sequence[P], seed: int = SAMPLE_SEED) -> list[P]:
    """Every respondent in draw order: the round-robin over seeded per-country permutations."""
    groups: dict[str, list[P]] = defaultdict(list)
    for person in respondents:
        groups[stratum(person)].append(person)
    countries = sorted(groups)
    countries = [countries[i] for i in _rng(seed, "countries").permutation(len(countries))]
    queues = []
    for country in countries:
        members = sorted(groups[country], key=lambda p: p.person_id)
        queues.append([members[i] for i in _rng(seed, country).permutation(len(members))])
    return [person for round_ in zip_longest(*queues) for person in round_ if person is not None]


def stratified_sample(respondents: Sequence[P], size: int, seed: int = SAMPLE_SEED) -> tuple[P, ...]:
    """``size`` respondents stratified by country, returned in their original order."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"sample size {size!r}: expected a positive integer")
    if size > len(respondents):
        raise ConfigError(f"sample size {size} exceeds the {len(respondents)} respondents available")
    chosen = {id(person) for person in draw_order(respondents, seed)[:size]}
    return tuple(person for person in respondents if id(person) in chosen)


def draw_ranks(respondents: Sequence[P], seed: int = SAMPLE_SEED,
               leave_out: Sequence[bool] | None = None) -> list[int]:
    """Each respondent's position in the draw order: the sample of size ``n`` is those ranked below
    ``n`` (so samples nest); ``leave_out`` rank past every sample."""
    drawn = respondents if leave_out is None else [p for p, out in zip(respondents, leave_out) if not out]
    rank = {id(person): i for i, person in enumerate(draw_order(drawn, seed))}
    return [rank.get(id(person), sys.maxsize) for person in respondents]
