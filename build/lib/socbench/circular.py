"""Circular evaluation (OpenCompass's CircularEval): re-ask a multiple-choice item with its
options reordered; an item counts as truly solved only if every order is answered right.

``expand_item`` turns one item into variants (``types.Variant``): ``circular`` the n rotations
of its options, ``all_possible`` all n! orders (refused for n > 5 unless ``max_variants`` caps
it: the n rotations plus a seeded sample of other orders, the ``sampled`` metric family).
Every item keeps its own labels and count; nothing assumes A-D.

Conventions (one place, used by prompts, scoring, metrics and reports):

* a *pattern* is the item's original option labels in the order displayed; the *origin*
  is the original order, so the identity variant is ``pattern == origin`` (found by value,
  never by position in a list or file). OpenCompass's dataset code stores the inverse
  permutation (the slot each original option moves to); the set of rotations, the
  identity and hence every metric are the same.
* ``keep_labels=False`` (ARC, OpenCompass): positions keep their labels (A, B, C, ...) and
  the texts move, so the gold label is remapped. ``keep_labels=True`` (ISSP's default,
  ``--circular_labels order_only``): each code stays attached to its text and only the order
  of lines changes. That measures *order* bias alone: a model that always answers "1" names
  the same option in every order and looks perfectly consistent. ``--circular_labels
  relabel`` (ISSP) numbers the options 1..n by position in each order and maps the answer
  back, OpenCompass's relabelling: *label and order* bias, and "always 1" scores perf 0.
* a variant's id is ``"<qid>--<pattern>"``; its ``request_id`` is the plain ``qid`` when its
  prompt is the normal one (identity order, own labels), so that request is byte-identical
  to the non-circular one (same cache entry, same normal score).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Any

from socbench.errors import ConfigError, DataError
from socbench.shuffle import display_order, order_seed
from socbench.types import CircularSettings, Item, Pattern, Variant

MAX_ALL_POSSIBLE_OPTIONS = 5  # 5! = 120 orders; 6! = 720 needs an explicit --max_variants
_ENUMERATE_LIMIT = 40_320  # up to 8! orders are listed and sampled; beyond, drawn one by one


# ------------------------------------------------------------------------ patterns


def rotations(labels: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The n rotations, identity first (OpenCompass's ``get_circular_patterns``)."""
    doubled = tuple(labels) * 2
    return [doubled[i:i + len(labels)] for i in range(len(labels))]


def all_orders(labels: Sequence[str]) -> list[Pattern]:
    """All n! orders, identity first (OpenCompass's ``get_all_possible_patterns``)."""
    return list(itertools.permutations(labels))


def sampled_orders(labels: Sequence[str], count: int, seed: int, qid: str) -> list[Pattern]:
    """The n rotations (identity first) plus ``count - n`` other orders drawn with a seed
    derived from (seed, qid); ``count`` below n gives the rotations alone."""
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
    """The patterns of one item and whether they are a seeded sample (never smaller than the
    item's n rotations)."""
    if settings.mode == "circular":
        return rotations(labels), False
    n, total = len(labels), math.factorial(len(labels))
    if settings.max_variants is not None and max(settings.max_variants, n) < total:
        return sampled_orders(labels, settings.max_variants, settings.seed, qid), True
    if n > MAX_ALL_POSSIBLE_OPTIONS and settings.max_variants is None:
        raise ConfigError(f"--circular all_possible: item {qid} has {n} options ({total} orders); "
                          "pass --max_variants N to ask its rotations and a seeded sample of other orders "
                          "(N in all), or use --circular circular")
    return all_orders(labels), False


# ----------------------------------------------------------------------- expansion


def expand_item(qid: str, options: Sequence[tuple[str, str]], gold: str, settings: CircularSettings, *,
                keep_labels: bool = False, positions: Sequence[str] | None = None) -> list[Variant]:
    """All variants of one item (``options`` as (label, text) in original order, ``gold`` a
    label), the gold label remapped with the options. Without ``keep_labels`` the positions
    show ``positions`` (default: the original labels in their order)."""
    labels = tuple(label for label, _ in options)
    if len(set(labels)) != len(labels) or not labels:
        raise DataError(f"item {qid}: option labels {list(labels)} are empty or repeated")
    if gold not in labels:
        raise DataError(f"item {qid}: gold {gold!r} is not one of its options {list(labels)}")
    texts = dict(options)
    patterns, sampled = variant_patterns(labels, settings, qid)
    variants = []
    for pattern in patterns:
        shown = pattern if keep_labels else tuple(positions or labels)
        variants.append(Variant(qid=qid, pattern=pattern, shown=shown, origin=labels,
                                gold=shown[pattern.index(gold)],
                                texts=tuple(texts[label] for label in pattern), sampled=sampled))
    return variants


def issp_variants(item: Item, settings: CircularSettings) -> list[Variant]:
    """Variants of one scoreable ISSP item; the origin is the order that respondent is shown
    (survey order, or the run's seeded shuffle)."""
    if item.true_code is None:
        raise ValueError(f"item {item.item_id} has no true code; only scoreable items have variants")
    order = display_order(item.offered_codes, settings.shuffle_options, settings.seed,
                          item.person_id, item.question_id)
    labels = dict(item.options)
    relabel = settings.labels == "relabel"
    return expand_item(item.item_id, [(code, labels[code]) for code in order], item.true_code, settings,
                       keep_labels=not relabel,
                       positions=[str(i) for i in range(1, len(order) + 1)] if relabel else None)

