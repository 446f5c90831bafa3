"""What the fake OpenAI server "says": a toy tokenizer and deterministic answers and log-probs.

Fake tokens are digits one by one, words, whitespace runs and single symbols. The answer
code is picked by a hash of the prompt (``pick_code``); echoed prompt tokens score
``token_logprob(position, token)``, so tests can recompute any number independently.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import zlib
from collections.abc import Callable
from typing import Any

_TOKEN = re.compile(r"\d|[^\W\d_]+|\s+|.", re.S)
_OPTION = re.compile(r"^\s*([A-Za-z0-9-]+)[.)]\s+\S|^\s*(-?\d+)\s*$", re.M)  # "2. text" or a bare "2"
ID_BASE = 1000
Answer = Callable[..., str]  # (prompt, codes) -> content, or (prompt, codes, seed) (the request's "seed")
PROSE = "I would probably pick the second one."


def fake_tokens(text: str) -> list[str]:
    """The fake tokenizer: digits one by one, words, whitespace runs, single symbols."""
    return _TOKEN.findall(text)


def token_id(token: str) -> int:
    return ID_BASE + zlib.crc32(token.encode()) % 1_000_000


def token_logprob(position: int, token: str) -> float:
    """Log-prob the fake model gives ``token`` at ``position`` of an echoed prompt."""
    return -0.05 - (zlib.crc32(f"{position}:{token}".encode()) % 400) / 100


def pick_code(prompt: str, codes: tuple[str, ...]) -> str:
    """The code the fake model answers for this prompt."""
    return codes[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(codes)] if codes else "1"


_RANGE = re.compile(r"a number from (-?\d+(?:\.\d+)?) to (-?\d+(?:\.\d+)?)")  # a numeric question's prompt


def default_answer(prompt: str, codes: tuple[str, ...]) -> str:
    """A code by ``pick_code``; for a numeric question a whole number of its range, by the same hash."""
    asked = _RANGE.search(prompt)
    if asked:
        low, high = (int(float(end)) for end in asked.groups())
        return json.dumps({"answer": low + int(pick_code(prompt, tuple(map(str, range(high - low + 1)))))})
    return json.dumps({"answer": pick_code(prompt, codes)})


def rendered(body: dict[str, Any]) -> str:
    """The text the fake model reads (its prompt tokens): chat messages in its own template, else the
    raw prompt; ``/tokenize`` and ``usage`` both count it."""
    if "messages" not in body:
        return str(body.get("prompt", ""))
    text = "".join(f"<|{m['role']}|>{m.get('content') or ''}\n" for m in body["messages"])
    return text if body.get("continue_final_message") else text + "<|assistant|>"


def prompt_and_codes(body: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The prompt text (chat: every non-assistant message) and the codes it offers."""
    if "messages" in body:
        asked = [m for m in body["messages"] if m.get("role") != "assistant"]
        prompt = "\n".join(str(m.get("content") or "") for m in asked)
    else:
        prompt = str(body.get("prompt", ""))
    schema = (body.get("structured_outputs") or {}).get("json") or \
        ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    enum = schema.get("properties", {}).get("answer", {}).get("enum") or _regex_codes(body)
    return prompt, tuple(enum) if enum else tuple(dict.fromkeys(a or b for a, b in _OPTION.findall(prompt)))


def _regex_codes(body: dict[str, Any]) -> list[str] | None:
    """The codes of a ``structured_outputs`` regex as socbench writes it (``{"answer": "(a|b)"}``)."""
    found = re.search(r"\((.*)\)", (body.get("structured_outputs") or {}).get("regex") or "")
    return [re.sub(r"\\(.)", r"\1", alt) for alt in found.group(1).split("|")] if found else None


def _continue(answer: str, body: dict[str, Any]) -> str:
    """The rest of ``answer`` when the reply was started (assistant prefix, or the raw prompt's tail)."""
    if body.get("continue_final_message"):
        started = str(body["messages"][-1].get("content") or "")
        return answer[len(started):] if answer.startswith(started) else answer
    prompt = str(body.get("prompt", ""))
    done = next((k for k in range(len(answer), 1, -1) if prompt.endswith(answer[:k])), 0)
    return answer[done:]


class FakeModel:
    """Builds chat/completions payloads; remembers the tokens it has handed out ids for."""

    def __init__(self, model: str, answer: Answer | None = None, reasoning_tokens: int = 0) -> None:
        self.model, self.answer = model, answer or default_answer
        self.seeded = len(inspect.signature(self.answer).parameters) >= 3  # a sampling model: sees the seed
        self.reasoning_tokens = reasoning_tokens  # claimed by every reply (as o1-style models report)
        self.vocab: dict[int, str] = {}

    def tokenize(self, text: str) -> list[int]:
        return [self._id(t) for t in fake_tokens(text)]

    def reply(self, chat: bool, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        """The response payload; ``fault`` may be null/empty/prose content."""
        prompt, codes = prompt_and_codes(body)
        said = self.answer(prompt, codes, body.get("seed")) if self.seeded else self.answer(prompt, codes)
        content: str | None = _continue(said, body)
        content = {"null": None, "empty": "", "prose": PROSE}.get(fault, content)
        payload = (self._chat if chat else self._completion)(body, prompt, codes, content)
        if body.get("prompt_logprobs") is not None and content is not None:
            where = payload if chat else payload["choices"][0]  # as vLLM places them
            where["prompt_logprobs"] = self._prompt_logprobs(body, codes)
        said = min(len(fake_tokens(content or "")) + self.reasoning_tokens, body.get("max_tokens", 1 << 30))
        read, thought = len(fake_tokens(rendered(body))), min(self.reasoning_tokens, said)
        payload["usage"] = {"prompt_tokens": read, "completion_tokens": said, "total_tokens": read + said,
                            "completion_tokens_details": {"reasoning_tokens": thought}}
        return payload

    def _chat(self, body: dict[str, Any], prompt: str, codes: tuple[str, ...], content: str | None) -> dict:
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}
        if body.get("logprobs") and content is not None:
            pairs = self._top(body, prompt, codes, body.get("top_logprobs", 0))
            top = [{"token": t, "logprob": lp} for t, lp in pairs]
            choice["message"]["content"] = content and top[0]["token"]
            choice["logprobs"] = {"content": [dict(top[0], top_logprobs=top)]} if content else {"content": []}
        return self._envelope("chat.completion", choice)

    def _completion(self, body: dict[str, Any], prompt: str, codes: tuple[str, ...],
                    content: str | None) -> dict:
        choice: dict[str, Any] = {"index": 0, "text": content, "finish_reason": "stop"}
        if body.get("echo"):
            tokens = fake_tokens(prompt)
            offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
            logprobs = [None] + [token_logprob(i, t) for i, t in enumerate(tokens) if i]
            tops = [None] + [{t: token_logprob(i, t), "<alt>": token_logprob(i, "<alt>")}
                             for i, t in enumerate(tokens) if i]
            choice["text"] = prompt
            choice["logprobs"] = {"tokens": tokens, "text_offset": offsets, "token_logprobs": logprobs,
                                  "top_logprobs": tops}
        elif body.get("logprobs") and content is not None:
            top = self._top(body, prompt, codes, body["logprobs"]) if content else []
            choice["text"] = top[0][0] if top else content
            choice["logprobs"] = {"tokens": [t for t, _ in top[:1]], "text_offset": [0] * len(top[:1]),
                                  "token_logprobs": [lp for _, lp in top[:1]],
                                  "top_logprobs": [dict(top)] if top else []}
        return self._envelope("text_completion", choice)

    def _prompt_logprobs(self, body: dict[str, Any], codes: tuple[str, ...]) -> list[dict | None]:
        """Per prompt token (vLLM shape). In the answer region (the continued assistant message,
        or the raw prompt's last line) the final code's tokens score -0.05 each if it is the
        picked code, else -3.0 each; every other region token scores -0.01."""
        if "messages" in body:
            *head, last = body["messages"]
            before = "".join(f"<|{m['role']}|>{m.get('content') or ''}\n" for m in head)
            before += f"<|{last['role']}|>"
            region = str(last.get("content") or "")
        else:
            before, _, region = str(body.get("prompt", "")).rpartition("\n")
        prompt, _ = prompt_and_codes(body)
        answered = re.search(r'([\w-]*)"?$', region).group(1)  # type: ignore[union-attr]
        quoted = region.endswith('"') and bool(answered)
        if "messages" not in body:  # the raw prompt without the code being scored
            prompt = prompt[: len(prompt) - len(answered) - quoted]
        code_lp = -0.05 if answered == pick_code(prompt, codes) else -3.0
        scored = [(t, token_logprob(i, t)) for i, t in enumerate(fake_tokens(before))]
        tail = fake_tokens(region)
        stop = len(tail) - quoted
        code_at = range(stop - len(fake_tokens(answered)), stop)
        scored += [(t, code_lp if j in code_at else -0.01) for j, t in enumerate(tail)]
        return [None] + [{str(self._id(t)): {"logprob": lp, "rank": 1, "decoded_token": t}}
                         for t, lp in scored[1:]]

    def _top(self, body: dict[str, Any], prompt: str, codes: tuple[str, ...],
             n: int) -> list[tuple[str, float]]:
        """Next-token log-probs: the picked code highest, other codes next, then filler tokens."""
        chosen = pick_code(prompt, codes)

        def score(token: str) -> float:
            return -0.05 if token.strip() == chosen else -1.5 - (zlib.crc32(token.encode()) % 300) / 100

        wanted = body.get("logprob_token_ids")
        if wanted:
            as_ids = body.get("return_tokens_as_token_ids")
            return [(f"token_id:{i}" if as_ids else self.vocab.get(i, "?"), score(self.vocab.get(i, "?")))
                    for i in wanted]
        candidates = {t: score(t) for t in (*codes, " ", "{", "The", "I", '"', "answer")}
        return sorted(candidates.items(), key=lambda kv: -kv[1])[: max(int(n), 1)]

    def _id(self, token: str) -> int:
        self.vocab[token_id(token)] = token
        return token_id(token)

    def _envelope(self, kind: str, choice: dict[str, Any]) -> dict[str, Any]:
        return {"id": "fake-1", "object": kind, "created": 0, "model": self.model, "choices": [choice]}
