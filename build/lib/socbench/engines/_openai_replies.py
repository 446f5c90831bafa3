"""Reading OpenAI-compatible replies, and planning how option codes are scored over HTTP.

Private to ``openai_api.py``. Parsers raise ``Unusable`` for a well-formed reply with unusable
content (asked once more) and KeyError/TypeError/... for a malformed one (retried).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal


class Unusable(Exception):
    """A well-formed reply whose content cannot be used. ``reply``: what the model said when asked
    again gave the same (an empty text is its answer); None: nothing usable (an engine error)."""

    def __init__(self, reason: str, reply: str | None = None) -> None:
        super().__init__(reason)
        self.reply = reply


@dataclass(frozen=True)
class OptionPlan:
    """How one request's codes are scored (``_chat``'s rule): ``single_token`` asks for the codes'
    tokens in one request; ``continuation`` scores prefix + code (+ closing quote) from prompt
    log-probs, one request per code; ``top`` (no ``/tokenize``) looks codes up by text among
    the top log-probs, ``-inf`` when absent."""

    method: Literal["single_token", "continuation", "top"]
    tokens: dict[str, tuple[int, ...]]  # code -> its token ids (one id for single_token)
    suffix: str = ""  # text after each code in continuation scoring (the closing quote)


def option_texts(prefix: str, codes: Sequence[str]) -> set[str]:
    """Texts whose tokenization an ``OptionPlan`` needs (the prefix's trailing space goes with the code)."""
    closing = closing_quote(prefix)
    return {prefix.rstrip()} | {prefix + c for c in codes} | {prefix + c + closing for c in codes}


def closing_quote(prefix: str) -> str:
    return '"' if prefix.rstrip().endswith('"') else ""


def option_plan(prefix: str, codes: Sequence[str], tokens: dict[str, list[int]] | None) -> OptionPlan:
    """Plan from the server's tokenization of ``option_texts`` (None: the server has no tokenizer)."""
    if tokens is None:
        return OptionPlan("top", {})

    def tail(text: str) -> tuple[int, ...] | None:
        head, full = tokens[prefix.rstrip()], tokens[text]
        return tuple(full[len(head):]) if full[:len(head)] == head and len(full) > len(head) else None

    single = {c: tail(prefix + c) for c in codes}
    ids = [t[0] for t in single.values() if t is not None and len(t) == 1]
    if len(ids) == len(codes) == len(set(ids)):
        return OptionPlan("single_token", single)  # type: ignore[arg-type]
    closing = closing_quote(prefix)
    conts = {c: tail(prefix + c + closing) for c in codes}
    if any(t is None for t in conts.values()):
        return OptionPlan("top", {})  # the code merges into the prefix: no clean boundary
    return OptionPlan("continuation", conts, closing)  # type: ignore[arg-type]


def content(text: Any) -> str:
    if text is None:
        raise Unusable("the server returned null content", reply="")
    if not isinstance(text, str) or not text.strip():
        raise Unusable("the server returned empty content", reply=text if isinstance(text, str) else "")
    return text


def chat_text(data: dict[str, Any]) -> str:
    return content(data["choices"][0]["message"]["content"])


def completion_text(data: dict[str, Any]) -> str:
    return content(data["choices"][0]["text"])


def next_token_logprobs(data: dict[str, Any]) -> list[tuple[str, float]]:
    """(token, log-prob) pairs of the first generated position, chat or completions shape."""
    choice = data["choices"][0]
    logprobs = choice.get("logprobs") or {}
    if "message" in choice:
        entries = (logprobs.get("content") or [{}])[0].get("top_logprobs")
        pairs = [(e["token"], float(e["logprob"])) for e in entries or []]
    else:
        first = (logprobs.get("top_logprobs") or [None])[0]
        pairs = [(token, float(lp)) for token, lp in (first or {}).items()]
    if not pairs:
        raise Unusable("the server returned no log-probs")
    return pairs


def pick_codes(pairs: list[tuple[str, float]], codes: Sequence[str],
               names: dict[str, str] | None) -> dict[str, float]:
    """Log-prob of each code: by token name (``token_id:N``) when asked exactly, else by text."""
    out = dict.fromkeys(codes, -math.inf)
    for token, logprob in pairs:
        code = names.get(token) if names is not None else token.strip()
        if code in out:
            out[code] = max(out[code], logprob)
    if all(v == -math.inf for v in out.values()):
        raise Unusable("none of the offered codes is among the server's log-probs")
    return out


def prompt_tail_logprob(data: dict[str, Any], expected: tuple[int, ...]) -> float:
    """Summed prompt log-probs (vLLM ``prompt_logprobs``) of the last tokens; they must be ``expected``."""
    rows = data.get("prompt_logprobs") or data["choices"][0].get("prompt_logprobs")  # chat: top level
    if not rows or len(rows) < len(expected):
        raise Unusable("the server returned no prompt log-probs")
    total = 0.0
    for row, token in zip(rows[-len(expected):], expected):
        if not row or str(token) not in row:
            raise Unusable("the server tokenized the answer differently than /tokenize")
        entry = row[str(token)]
        total += float(entry["logprob"] if isinstance(entry, dict) else entry)
    return total


def continuation_score(data: dict[str, Any], n_chars: int) -> tuple[float, int, bool]:
    """(sum of log-probs, token count, greedy?) of the echoed tokens covering the last n_chars
    (counted from the end, so a BOS token does not shift the boundary)."""
    lp = data["choices"][0]["logprobs"]
    tokens, offsets = lp["tokens"], lp["text_offset"]
    logprobs, tops = lp["token_logprobs"], lp["top_logprobs"]
    end = offsets[-1] + len(tokens[-1])
    picked = [i for i in range(len(tokens)) if offsets[i] + len(tokens[i]) > end - n_chars]
    if not picked or any(logprobs[i] is None for i in picked):
        raise Unusable("no scored continuation tokens in the echoed prompt")
    greedy = all(logprobs[i] >= max((tops[i] or {}).values(), default=logprobs[i]) - 1e-6 for i in picked)
    return sum(logprobs[i] for i in picked), len(picked), greedy
