"""Seeded option orders and option rendering.

The original system shuffled with no seed (``--shuffle_options=False`` could not turn it off). Here the
order is a pure function of (run seed, person, question), through sha256 (``hash()`` is salted per
process), recorded on each PromptRequest; codes stay attached to their labels.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from socbench.types import Code


def order_seed(run_seed: int, person_id: int | str, question_id: str) -> int:
    """A 64-bit seed for one (run, person, question), stable across processes."""
    digest = hashlib.sha256(f"{run_seed}\x1f{person_id}\x1f{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def display_order(codes: Sequence[Code], shuffle: bool, run_seed: int, person_id: int | str,
                  question_id: str) -> tuple[Code, ...]:
    """Survey order when ``shuffle`` is off, else a seeded permutation of ``codes``: the same inputs
    always give the same order."""
    if not shuffle:  # the codes' own tuple where they are one: shared by every item showing them
        return codes if isinstance(codes, tuple) else tuple(codes)
    order = list(codes)
    random.Random(order_seed(run_seed, person_id, question_id)).shuffle(order)
    return tuple(order)


def option_text(code: Code, label: str) -> str:
    """``code. label``, or the bare code where the label is only its number: an end-labelled
    scale's inner points read "2", not "2. 2" (nor "2. 02")."""
    text = label.strip()
    bare = text == code or (text.isdigit() and code.isdigit() and int(text) == int(code))
    return code if bare else f"{code}. {label}"


def render_options(options: Sequence[tuple[Code, str]], order: Sequence[Code]) -> str:
    """``id. text`` lines (``option_text``) in ``order``, a permutation of the codes."""
    labels = dict(options)
    if sorted(order) != sorted(labels):
        raise ValueError(f"option order {list(order)} is not a permutation of codes {list(labels)}")
    return "\n".join(option_text(code, labels[code]) for code in order)
