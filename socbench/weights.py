"""Design weights: which are usable, and why weighted metrics are off when they are not.

Why one rule everywhere: the importer, ``data validate`` and the scorer judge the same weights, so a
problem is named once at import, never found as a silently missing column. Usable: finite and above
zero; a zero weight puts a respondent outside the estimate, a choice the user makes (``--bad-weights``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

KINDS = ("missing", "infinite", "negative", "zero")
NO_WEIGHTS = "the data has no design weights"


def weight_problem(value: object) -> str | None:
    """The kind of problem of one weight (``KINDS``), None for a usable weight."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # None among them
        return "missing"
    if math.isnan(number):
        return "missing"  # a blank or system-missing cell
    return "infinite" if math.isinf(number) else "negative" if number < 0 else "zero" if number == 0 else None


def weight_problems(values: Iterable[object]) -> tuple[Counter[str], list[int]]:
    """(count per problem kind, positions of the problem weights, in order)."""
    kinds = [weight_problem(value) for value in values]
    return Counter(kind for kind in kinds if kind), [i for i, kind in enumerate(kinds) if kind]


def describe(counts: Counter[str]) -> str:
    """``"missing 2, zero 1"`` in ``KINDS`` order."""
    return ", ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts[kind])


def weights_off_reason(weights: Sequence[object], ids: Sequence[int]) -> str | None:
    """Why weighted metrics cannot be computed from these respondents' weights (None: they can)."""
    if all(value is None for value in weights):
        return NO_WEIGHTS
    counts, positions = weight_problems(weights)
    if not counts:
        return None
    first = ", ".join(str(ids[i]) for i in positions[:5])
    return (f"{len(positions)} of {len(weights)} respondents have no usable design weight "
            f"({describe(counts)}; first person_id {first})")
