"""Read the option code an engine's answer names, or say why it cannot be read.

The original system took the *first* ``"option"`` match (so an echoed empty template won), did not
normalise values (" 1", "01", "2, Agree") and guessed codes from prose. Here: the LAST JSON object with an
answer key (echoed templates skipped), else the last explicit ``"answer": <value>``; the value must be an
offered code or exactly an option's label, else a failure from ``FAILURES``. Nothing is guessed from prose.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from socbench.types import Code, EngineResult, Extraction, PromptRequest, Span

EMPTY = "empty response"
NO_JSON = "no JSON answer found"
TEMPLATE = "answer is the echoed template"
NOT_A_CODE = "answer not a code or option label"
NOT_OFFERED = "answer not an offered code"
NO_LOGPROBS = "no log-probs for offered codes"
NOT_A_NUMBER = "answer not a number"
OUT_OF_RANGE = "number outside the question's range"
# every extraction failure; an engine error (no reply at all) is carried apart, in Extraction.engine_error
FAILURES = (EMPTY, NO_JSON, TEMPLATE, NOT_A_CODE, NOT_OFFERED, NO_LOGPROBS, NOT_A_NUMBER, OUT_OF_RANGE)

ANSWER_KEYS = ("answer", "option_id", "option")  # in order of preference within one object
TEMPLATE_VALUES = frozenset({"option_id", "<option_id>", "option id", "<option id>", "id", "code", "...",
                             "number", "<number>"})

# "2", "-4", "02", "2.0", "2, Agree", "2. Agree", "2) Agree"; not "2.5", "5-9", "2nd".
_LEADING_INT = re.compile(r"^([+-]?\d+)(?:\.0+)?(?=$|[\s,;:)\]]|\.(?!\d))")
# "answer": "2" | 'answer': '2' | "answer": 2 ; a quoted value may be cut off at the end.
_EXPLICIT = re.compile(
    r"""(["'])(answer|option_id|option)\1\s*:\s*"""
    r"""(?:"([^"\n]*)(?:"|$)|'([^'\n]*)(?:'|$)|([+-]?\d+(?:\.\d+)?))""",
    re.IGNORECASE,
)
_DECODER = json.JSONDecoder()


def json_values(text: str, opens: str = "{") -> list[Any]:
    """Every JSON value starting at one of the characters ``opens`` in ``text`` (default: every object,
    nested ones too), in text order: prose around them is ignored."""
    found: list[Any] = []
    for start in (m.start() for m in re.finditer(f"[{re.escape(opens)}]", text)):
        try:
            found.append(_DECODER.raw_decode(text, start)[0])
        except ValueError:
            continue
    return found


def squash(text: str) -> str:
    """``text`` with its whitespace collapsed, case folded: how labels and names are compared."""
    return " ".join(text.split()).casefold()


def normalize_value(value: Any, offered: Sequence[tuple[Code, str | None]]) -> tuple[Code | None, str | None]:
    """One answer value -> (offered code, None) or (None, failure reason)."""
    if isinstance(value, (bool, list, dict)) or value is None or \
            isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None, NOT_A_CODE
    if isinstance(value, (int, float)):
        code = str(int(value))
    else:
        text = str(value).strip()
        # Exact labels first: some labels start with another number ("5-9 persons" is code 2).
        exact = [code for code, label in offered if label is not None and squash(label) == squash(text)]
        if text and exact:
            return exact[0], None
        if (match := _LEADING_INT.match(text)) is None:
            return None, NOT_A_CODE
        code = str(int(match.group(1)))
    codes = [code for code, _ in offered]  # the offered code itself: one string for millions of answers
    return (codes[codes.index(code)], None) if code in codes else (None, NOT_OFFERED)


def _number(value: Any, span: Span) -> tuple[Code | None, str | None]:
    """A numeric answer as its canonical code ("37", "37.5"), or why it is none."""
    try:  # a JSON value: a list, an object or null is no number either
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        return None, NOT_A_NUMBER
    if not span[0] <= number <= span[1]:
        return None, OUT_OF_RANGE
    return (str(int(number)) if number.is_integer() else repr(number)), None


def _answer_value(text: str | None) -> tuple[Any, str | None]:
    """(the last answer value that is not an echoed template, None), or (None, why there is none): the
    values of the JSON objects' answer keys (nested objects too; keys in any case, ``ANSWER_KEYS``' order
    within one), else of explicit ``"answer": value`` patterns, in text order."""
    if text is None or not text.strip():
        return None, EMPTY
    objects = ({str(k).strip().lower(): v for k, v in obj.items()} for obj in json_values(text))
    in_json = [next(obj[name] for name in ANSWER_KEYS if name in obj) for obj in objects
               if not obj.keys().isdisjoint(ANSWER_KEYS)]
    explicit = [next(v for v in m.group(3, 4, 5) if v is not None)  # the one alternative that matched
                for m in _EXPLICIT.finditer(text)]
    saw_template = False
    for values in (in_json, explicit):
        real = [v for v in values if not (isinstance(v, str) and v.strip().lower() in TEMPLATE_VALUES)]
        saw_template = saw_template or len(real) < len(values)
        if real:
            return real[-1], None
    return None, TEMPLATE if saw_template else NO_JSON


def extract_number(text: str | None, span: Span) -> tuple[Code | None, str | None]:
    """The number a reply to a numeric question names, within its range, or (None, failure reason)."""
    value, failure = _answer_value(text)
    return (None, failure) if failure else _number(value, span)


def extract_answer(text: str | None,
                   offered: Sequence[tuple[Code, str]] | Sequence[Code]) -> tuple[Code | None, str | None]:
    """The offered code named by a generated reply, or (None, failure reason)."""
    value, failure = _answer_value(text)
    options = [(str(o), None) if isinstance(o, (str, int)) else (str(o[0]), str(o[1])) for o in offered]
    return (None, failure) if failure else normalize_value(value, options)


def distribution_of(logprobs: Mapping[Code, float], offered: Sequence[Code]) -> dict[Code, float] | None:
    """Softmax over the offered codes' log-probs (a code the engine did not score gets 0)."""
    from scipy.special import softmax  # here: a run without log-probs needs no scipy (a second)

    scored = [c for c in offered if c in logprobs and logprobs[c] is not None and not math.isnan(logprobs[c])]
    if not scored or all(logprobs[c] == -math.inf for c in scored):
        return None
    by_code = dict(zip(scored, (float(p) for p in softmax([float(logprobs[c]) for c in scored]))))
    return {c: by_code.get(c, 0.0) for c in offered}


def extract(request: PromptRequest, result: EngineResult) -> Extraction:
    """Extraction for one request; the options the request showed allow exact labels. An engine error is
    passed on as ``engine_error`` (never a parse failure); the reply is ``raw_reply``."""
    if result.error is not None:
        return Extraction(None, engine_error=result.error)
    if request.numeric is None and (result.option_logprobs is not None or request.mode == "logprobs"):
        dist = distribution_of(result.option_logprobs or {}, request.offered_codes)
        if dist is None:
            return Extraction(None, NO_LOGPROBS)
        best = max(request.offered_codes, key=lambda c: dist[c])  # first code wins a tie
        return Extraction(best, None, dist)
    code, failure = extract_number(result.text, request.numeric) if request.numeric is not None else \
        extract_answer(result.text, request.options or request.offered_codes)
    return Extraction(code, failure, raw_reply=result.text)


def extract_all(prompts: Sequence[PromptRequest], results: Sequence[EngineResult],
                read: Callable[[PromptRequest, EngineResult], Extraction] = extract) -> dict[str, Extraction]:
    """Extractions by request id (``results`` in ``prompts`` order), each carrying its request's variant;
    ``read``: how one reply is read (``socbench.verbalized.extraction`` for stated distributions)."""
    return {p.item_id: read(p, r) if p.variant is None else replace(read(p, r), variant=p.variant)
            for p, r in zip(prompts, results, strict=True)}  # a plain request's as it is: no copy
