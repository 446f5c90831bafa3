"""Country-stratified, reproducible, nested respondent samples.

Seeded per-country permutations, taken in turn: equally (the importer's samples, a round-robin:
per-country counts differ by at most one) or proportionally (``--interview_count``: every country
first, then Huntington-Hill). The same seed gives the same sample, and a smaller sample is a
prefix of every larger one.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from socbench.errors import ConfigError
from socbench.types import Respondent

SAMPLE_SEED = 42


def stratum(person: Respondent) -> str:
    """The stratum of a respondent: its group (a grouping variable that is not a country), else its
    country code, else its country name as written."""
    return person.group or person.country_code or person.country_name or "(unknown)"


def _queues(respondents: Sequence[Respondent], seed: int) -> list[list[Respondent]]:
    """Each stratum's seeded permutation (by person id), the strata in a seeded order."""
    groups: dict[str, list[Respondent]] = defaultdict(list)
    for person in respondents:
        groups[stratum(person)].append(person)

    def shuffled(items: list, label: str) -> list:
        digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return [items[i] for i in rng.permutation(len(items))]

    return [shuffled(sorted(groups[country], key=lambda p: p.person_id), country)
            for country in shuffled(sorted(groups), "countries")]


def draw_order(respondents: Sequence[Respondent], seed: int = SAMPLE_SEED,
               proportional: bool = False) -> list[Respondent]:
    """Every respondent in draw order over seeded per-stratum permutations: a round-robin (a stratum's
    priority is what it has given so far), or ``proportional``, each prefix apportioned to the strata by
    Huntington-Hill: a stratum's priority is its size over sqrt(c(c+1)) with c drawn so far, infinite at
    c = 0, so every stratum comes in first, then prefixes follow the strata's shares (house-monotone:
    samples nest). Ties go to the stratum first in the seeded order."""
    queues = _queues(respondents, seed)
    heap = [(-math.inf if proportional else 0, index, 0) for index in range(len(queues))]
    order: list[Respondent] = []
    while heap:
        _, index, taken = heapq.heappop(heap)
        queue = queues[index]
        order.append(queue[taken])
        if taken + 1 < len(queue):
            priority = -len(queue) / math.sqrt((taken + 1) * (taken + 2)) if proportional else taken + 1
            heapq.heappush(heap, (priority, index, taken + 1))
    return order


def stratified_sample(respondents: Sequence[Respondent], size: int, seed: int = SAMPLE_SEED,
                      proportional: bool = False) -> tuple[Respondent, ...]:
    """``size`` respondents stratified by country (equally, or ``proportional`` to the strata's
    sizes), returned in their original order."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"sample size {size!r}: expected a positive integer")
    if size > len(respondents):
        raise ConfigError(f"sample size {size} exceeds the {len(respondents)} respondents available")
    chosen = {id(person) for person in draw_order(respondents, seed, proportional)[:size]}
    return tuple(person for person in respondents if id(person) in chosen)


def draw_ranks(respondents: Sequence[Respondent], seed: int = SAMPLE_SEED,
               leave_out: Sequence[bool] | None = None) -> list[int]:
    """Each respondent's position in the draw order: the sample of size ``n`` is those ranked below
    ``n`` (so samples nest); ``leave_out`` rank past every sample."""
    drawn = respondents if leave_out is None else [p for p, out in zip(respondents, leave_out) if not out]
    rank = {id(person): i for i, person in enumerate(draw_order(drawn, seed))}
    return [rank.get(id(person), sys.maxsize) for person in respondents]


def sample_record(people: Sequence[Respondent], drawn: str, population: int,
                  grouping: str = "country") -> dict[str, Any]:
    """Which respondents a run asked, for its results: ``drawn`` (all, stratified, first), from how
    many, per stratum (of ``grouping``: the country, or the study's grouping variable by its own name),
    the seed of a stratified draw, and the person ids of any sample."""
    record: dict[str, Any] = {"drawn": drawn, "population": population, "respondents": len(people),
                              "strata": dict(sorted(Counter(map(stratum, people)).items()))}
    if drawn == "stratified":
        record.update(seed=SAMPLE_SEED, stratified_by=f"{grouping}, proportional (Huntington-Hill)")
    if drawn != "all":
        record["person_ids"] = [person.person_id for person in people]
    return record
