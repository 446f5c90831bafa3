"""Verbalized distributions (SimBench's second elicitation, ``--mode verbalized``): the model states the
percentage of people choosing each offered option, as one JSON object keyed by the option labels shown.
Why here: a hosted model without log-probabilities can still be scored on distributions, in one request.

The reply is validated (every share a non-negative number, not all zero) and normalised; a total that is
not 100 is normalised with a note, never refused. The item's single answer is the option with most mass
(ties: the first in survey order) or a seeded draw from the distribution (``pick``)."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from socbench.extract import EMPTY, extract, json_values, normalize_value
from socbench.types import Code, EngineResult, Extraction, Pick, PromptRequest

NO_DISTRIBUTION = "no JSON distribution found"
NOT_A_SHARE = "share not a number"
NEGATIVE = "negative share"
ALL_ZERO = "shares sum to 0"
TOLERANCE = 0.5  # percentage points a total may miss 100 by without a note (rounding)

_SHARE = re.compile(r"^\s*([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)\s*%?\s*$")  # 40 | 40.5 | "40%"
_PERCENT = "(100|[1-9]?[0-9])"  # an integer 0-100: bounded digits, so a constrained reply always ends


def schema(labels: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a reply (OpenAI's ``response_format``): every shown label, an integer 0-100."""
    share = {"type": "integer", "minimum": 0, "maximum": 100}
    return {"type": "object", "properties": {label: share for label in labels},
            "required": list(labels), "additionalProperties": False}


def regex(labels: Sequence[str]) -> str:
    """The same reply as a regex (vLLM's structured outputs): keys in the order shown, ``{"1": 40, ...}``."""
    pairs = ", ".join(f'"{re.escape(label)}": {_PERCENT}' for label in labels)
    return r"\{" + pairs + r"\}"


def _share(value: Any) -> float | None:
    """A stated percentage as a number (``40``, ``40.5``, ``"40%"``); None when it is not one."""
    if isinstance(value, str):
        match = _SHARE.match(value)
        value = float(match.group(1)) if match else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _keyed(obj: Mapping[Any, Any], offered: Sequence[tuple[Code, str]]) -> dict[Code, Any]:
    """The object's values by offered label (a key may name the label or exactly the option's text)."""
    pairs = [(normalize_value(str(key), offered)[0], value) for key, value in obj.items()]
    return {code: value for code, value in reversed(pairs) if code is not None}  # the first of a code's


def parse_distribution(text: str | None, offered: Sequence[tuple[Code, str]]
                       ) -> tuple[dict[Code, float] | None, str | None]:
    """(shares by offered label in survey order summing to 1, a note or None), or (None, failure reason).
    The last JSON object in the reply naming an offered option is read; options it leaves out get 0."""
    if text is None or not text.strip():
        return None, EMPTY
    objects = [keyed for keyed in (_keyed(obj, offered) for obj in json_values(text)) if keyed]
    if not objects:
        return None, NO_DISTRIBUTION
    shares = {code: _share(value) for code, value in objects[-1].items()}
    if any(share is None for share in shares.values()):
        return None, NOT_A_SHARE
    if any(share < 0 for share in shares.values()):  # type: ignore[operator]
        return None, NEGATIVE
    total = math.fsum(shares.values())  # type: ignore[arg-type]
    if total <= 0:
        return None, ALL_ZERO
    distribution = {code: (shares.get(code) or 0.0) / total for code, _ in offered}
    missing = [code for code, _ in offered if code not in shares]
    notes = ([f"shares summed to {total:g}, normalised"] if abs(total - 100) > TOLERANCE else []) + \
        ([f"no share for {', '.join(missing)} (0)"] if missing else [])
    return distribution, "; ".join(notes) or None


def pick(distribution: Mapping[Code, float], how: Pick = "mode", seed: int = 42, item_id: str = "") -> Code:
    """The item's one answer: the code with most mass (ties: first in survey order), or with ``draw`` a
    draw seeded by (``seed``, ``item_id``), so a rerun picks the same code for the same item."""
    codes = list(distribution)
    if how == "draw":
        return random.Random(f"{seed}|{item_id}").choices(codes, weights=list(distribution.values()))[0]
    return max(codes, key=lambda code: distribution[code])


def extraction(request: PromptRequest, result: EngineResult, how: Pick = "mode",
               seed: int = 42) -> Extraction:
    """One verbalized reply read: the shares as the item's ``distribution``, the picked code as its answer,
    a normalisation as its ``note``; an engine error passed on, an unreadable reply a failure. A request
    asked otherwise in the same run (a numeric question's number) is read as ``extract`` reads it."""
    if request.mode != "verbalized" or result.error is not None:  # ``extract`` passes an engine error on
        return extract(request, result)
    offered = request.options or tuple((code, code) for code in request.offered_codes)
    distribution, said = parse_distribution(result.text, offered)
    if distribution is None:
        return Extraction(None, said, raw_reply=result.text)
    return Extraction(pick(distribution, how, seed, request.item_id), None, distribution,
                      raw_reply=result.text, note=said)


def record(extractions: Mapping[str, Extraction], how: Pick, seed: int) -> dict[str, float]:
    """What a domain's metrics say of its verbalized answers: how many replies were normalised (their
    shares did not sum to 100, or left options out) and, for drawn answers, the seed of the draws."""
    normalised = sum(e.note is not None for e in extractions.values())
    return {"verbalized_normalised": float(normalised)} | ({"verbalized_draw_seed": float(seed)}
                                                           if how == "draw" else {})
