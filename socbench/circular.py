"""Circular evaluation (OpenCompass's CircularEval): re-ask a multiple-choice item with its
options reordered; an item counts as truly solved only if every order is answered right.

A right answer may be luck or a preference for a position. ``expand_item`` turns one item
into variants: ``circular`` gives the n rotations of its options, ``all_possible`` all n!
orders (refused for n > 5 unless ``max_variants`` caps it with a seeded sample, identity
kept). Every item keeps its own labels and count; nothing assumes A-D.

Conventions (one place, used by prompts, scoring, metrics and reports):

* a *pattern* is the item's original option labels in the order displayed; the *origin*
  is the original order, so the identity variant is ``pattern == origin`` (found by value,
  never by position in a list or file). OpenCompass's dataset code stores the inverse
  permutation (the slot each original option moves to); the set of rotations, the
  identity and hence every metric are the same.
* ``keep_labels=False`` (ARC, OpenCompass): positions keep their labels (A, B, C, ...) and
  the texts move, so the gold label is remapped. ``keep_labels=True`` (ISSP): each code
  stays attached to its text and only the order of lines changes.
* a variant's id is ``"<qid>--<pattern>"``; its ``request_id`` is the plain ``qid`` for the
  identity variant, so that request is byte-identical to the non-circular one (same cache
  entry, same normal score).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from socbench.errors import ConfigError, DataError
from socbench.prompts.shuffle import display_order, order_seed
from socbench.types import Item

CircularMode = Literal["circular", "all_possible"]
MODES: tuple[str, ...] = ("circular", "all_possible")
MAX_ALL_POSSIBLE_OPTIONS = 5  # 5! = 120 orders; 6! = 720 needs an explicit --max_variants
_ENUMERATE_LIMIT = 40_320  # up to 8! orders are listed and sampled; beyond, drawn one by one
Pattern = tuple[str, ...]


# ------------------------------------------------------------------------- records


@dataclass(frozen=True)
class MCItem:
    """A multiple-choice item: ``options`` as (label, text) in original order, gold label."""

    qid: str
    options: tuple[tuple[str, str], ...]
    gold: str

    def __post_init__(self) -> None:
        labels = self.labels
        if len(set(labels)) != len(labels) or not labels:
            raise DataError(f"item {self.qid}: option labels {list(labels)} are empty or repeated")
        if self.gold not in labels:
            raise DataError(f"item {self.qid}: gold {self.gold!r} is not one of its options {list(labels)}")

    @property
    def labels(self) -> Pattern:
        return tuple(label for label, _ in self.options)


@dataclass(frozen=True)
class Variant:
    """One displayed order of an item, with everything needed to score and map answers back."""

    qid: str
    pattern: Pattern  # original labels in displayed order
    shown: Pattern  # the label displayed at each position
    texts: tuple[str, ...]  # the option text displayed at each position
    gold: str  # displayed label of the gold option
    origin: Pattern  # original labels in original order
    sampled: bool = False  # one of a seeded sample of all_possible orders

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return tuple(zip(self.shown, self.texts))

    @property
    def variant_id(self) -> str:
        return variant_id(self.qid, self.pattern)

    @property
    def is_origin(self) -> bool:
        return self.pattern == self.origin

    @property
    def request_id(self) -> str:
        """The id its request carries: the plain qid for the identity order."""
        return self.qid if self.is_origin else self.variant_id


@dataclass(frozen=True)
class VariantResult:
    """A variant with the model's answer (a displayed label, None when unreadable)."""

    qid: str
    pattern: Pattern
    shown: Pattern
    origin: Pattern
    gold: str
    prediction: str | None
    sampled: bool = False
    parse_error: str | None = None

    @classmethod
    def of(cls, variant: Variant, prediction: str | None, parse_error: str | None = None) -> VariantResult:
        return cls(variant.qid, variant.pattern, variant.shown, variant.origin, variant.gold,
                   prediction, variant.sampled, parse_error)

    @property
    def correct(self) -> bool:
        return self.prediction is not None and self.prediction == self.gold

    @property
    def is_origin(self) -> bool:
        return self.pattern == self.origin

    @property
    def variant_id(self) -> str:
        return variant_id(self.qid, self.pattern)

    def to_original(self, label: str | None) -> str | None:
        """A displayed label mapped back to the original label of the same option."""
        return self.pattern[self.shown.index(label)] if label in self.shown else None

    @property
    def gold_original(self) -> str:
        return self.pattern[self.shown.index(self.gold)]


@dataclass(frozen=True)
class CircularSettings:
    """How a run expands items; ``seed``/``shuffle_options`` also fix ISSP's base order."""

    mode: CircularMode
    max_variants: int | None = None
    seed: int = 42
    shuffle_options: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"--circular {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.max_variants is not None and self.max_variants < 1:
            raise ConfigError(f"--max_variants {self.max_variants}: must be a positive integer")
        if self.max_variants is not None and self.mode != "all_possible":
            raise ConfigError("--max_variants applies only to --circular all_possible "
                              "(circular asks the n rotations)")


def circular_settings(config: Any) -> CircularSettings | None:
    """The circular settings of a run configuration, or None when circular evaluation is off.

    ``max_variants`` is read if the configuration has it (RunConfig may not yet).
    """
    if getattr(config, "circular", None) is None:
        return None
    return CircularSettings(config.circular, getattr(config, "max_variants", None), config.seed,
                            bool(getattr(config, "shuffle_options", False)))


# ------------------------------------------------------------------------ patterns


def pattern_text(pattern: Sequence[str]) -> str:
    """``ABCD`` when every label is one character (OpenCompass's form), else ``1,10,-4``."""
    return "".join(pattern) if all(len(label) == 1 for label in pattern) else ",".join(pattern)


def variant_id(qid: str, pattern: Sequence[str]) -> str:
    return f"{qid}--{pattern_text(pattern)}"


def rotations(labels: Sequence[str]) -> list[Pattern]:
    """The n rotations, identity first (OpenCompass's ``get_circular_patterns``)."""
    doubled = tuple(labels) * 2
    return [doubled[i:i + len(labels)] for i in range(len(labels))]


def all_orders(labels: Sequence[str]) -> list[Pattern]:
    """All n! orders, identity first (OpenCompass's ``get_all_possible_patterns``)."""
    return list(itertools.permutations(labels))


def sampled_orders(labels: Sequence[str], count: int, seed: int, qid: str) -> list[Pattern]:
    """The identity plus ``count - 1`` other orders drawn with a seed derived from (seed, qid)."""
    n = len(labels)
    identity = tuple(range(n))
    rng = random.Random(order_seed(seed, "circular-sample", qid))
    if math.factorial(n) <= _ENUMERATE_LIMIT:
        others = [p for p in itertools.permutations(range(n)) if p != identity]
        picks = rng.sample(others, count - 1)
    else:
        seen, picks = {identity}, []
        while len(picks) < count - 1:
            order = tuple(rng.sample(range(n), n))
            if order not in seen:
                seen.add(order)
                picks.append(order)
    return [tuple(labels)] + [tuple(labels[i] for i in p) for p in sorted(picks)]


def variant_patterns(labels: Sequence[str], mode: CircularMode, *, max_variants: int | None = None,
                     seed: int = 42, qid: str = "") -> tuple[list[Pattern], bool]:
    """The patterns of one item and whether they are a seeded sample."""
    if mode == "circular":
        return rotations(labels), False
    if mode != "all_possible":
        raise ConfigError(f"--circular {mode!r}: expected one of {', '.join(MODES)}")
    n, total = len(labels), math.factorial(len(labels))
    if max_variants is not None and max_variants < total:
        return sampled_orders(labels, max_variants, seed, qid), True
    if n > MAX_ALL_POSSIBLE_OPTIONS and max_variants is None:
        raise ConfigError(f"--circular all_possible: item {qid} has {n} options ({total} orders); "
                          "pass --max_variants N to ask a seeded sample of N orders, "
                          "or use --circular circular")
    return all_orders(labels), False


# ----------------------------------------------------------------------- expansion


def expand_item(item: MCItem, mode: CircularMode, *, keep_labels: bool = False,
                max_variants: int | None = None, seed: int = 42) -> list[Variant]:
    """All variants of one item, the gold label remapped with the options."""
    labels = item.labels
    texts = dict(item.options)
    patterns, sampled = variant_patterns(labels, mode, max_variants=max_variants, seed=seed, qid=item.qid)
    variants = []
    for pattern in patterns:
        shown = pattern if keep_labels else labels
        variants.append(Variant(
            qid=item.qid, pattern=pattern, shown=shown, texts=tuple(texts[label] for label in pattern),
            gold=shown[pattern.index(item.gold)], origin=labels, sampled=sampled,
        ))
    return variants


def expand_items(items: Iterable[MCItem], mode: CircularMode, **options: Any) -> list[Variant]:
    """``expand_item`` over many items, variants of one item adjacent."""
    return [variant for item in items for variant in expand_item(item, mode, **options)]


def issp_variants(item: Item, settings: CircularSettings) -> list[Variant]:
    """Variants of one scoreable ISSP item: orders of the options as that respondent sees them.

    The origin is the respondent's displayed order (survey order, or the run's seeded
    shuffle), so the identity variant is exactly the normal prompt. Codes stay attached to
    their text (``keep_labels``), and the true code is never remapped.
    """
    if item.true_code is None:
        raise ValueError(f"item {item.item_id} has no true code; only scoreable items have variants")
    order = display_order(item.offered_codes, settings.shuffle_options, settings.seed,
                          item.person_id, item.question_id)
    labels = dict(item.options)
    mc = MCItem(item.item_id, tuple((code, labels[code]) for code in order), item.true_code)
    return expand_item(mc, settings.mode, keep_labels=True, max_variants=settings.max_variants,
                       seed=settings.seed)
