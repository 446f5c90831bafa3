"""Tokens a backend used, as its server reported them (an OpenAI-compatible reply's ``usage``) or its
engine counted them (vLLM's token ids): summed over every reply received, retried ones included (they are
paid for too). ``pipeline.answer`` reads the total before and after a unit's requests."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

KEYS = ("prompt_tokens", "completion_tokens", "reasoning_tokens")  # reasoning: part of completion (OpenAI's)


class UsageMeter:
    """A running total, added to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total: Counter[str] = Counter()

    def add(self, prompt: int, completion: int, reasoning: int = 0) -> None:
        with self._lock:
            self._total.update(prompt_tokens=prompt, completion_tokens=completion, reasoning_tokens=reasoning)

    def add_reply(self, usage: Any) -> None:
        """A reply's ``usage`` object (absent or malformed: nothing is counted)."""
        if not isinstance(usage, dict):
            return
        details = usage.get("completion_tokens_details")
        reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else 0
        try:
            self.add(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                     int(reasoning or 0))
        except (TypeError, ValueError):
            return

    def total(self) -> dict[str, int]:
        with self._lock:
            return {key: self._total[key] for key in KEYS}


def total_usage(usages: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum of units' ``Answers.usage``; a token count only where every unit has one."""
    usages = list(usages)
    keys = set.intersection(*(set(u) for u in usages)) if usages else set()
    return {key: sum(u[key] for u in usages) for key in ("requests", "from_cache", *KEYS) if key in keys}


def usage_text(usage: Mapping[str, int]) -> str:
    """One line for a report: what this run sent and the tokens it used."""
    if not usage:
        return "Tokens: not recorded."
    sent = f"{usage['requests']:,} requests sent, {usage['from_cache']:,} answers from the engine cache " \
           "(not sent: they cost nothing in this run)"
    if "prompt_tokens" not in usage:
        return f"{sent}; tokens not counted by this backend."
    reasoning = f" ({usage['reasoning_tokens']:,} of them reasoning)" if usage["reasoning_tokens"] else ""
    return f"{sent}; tokens used: {usage['prompt_tokens']:,} prompt, {usage['completion_tokens']:,} " \
           f"completion{reasoning}, as reported by the backend."
