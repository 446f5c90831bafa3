"""OpenAI-compatible HTTP backend (a vLLM server, OpenAI, ...): aiohttp, bounded concurrency, retries.

All requests of a call are submitted at once; a semaphore keeps at most
``concurrent_requests`` in flight, and each result is reported through ``on_result`` as it
finishes. Retries (exponential backoff with full jitter, ``Retry-After`` honoured) cover
429/408/409/5xx, timeouts, connection errors and malformed bodies; a well-formed reply with
unusable content (null or empty message, no log-probs) is asked once more, then becomes an
``EngineResult`` with ``error``. The API key never leaves the Authorization header.

What each method sends (vLLM server extensions where the OpenAI API has no equivalent):

- ``generate``: ``/v1/chat/completions``; ``chat=False`` sends the raw text to ``/v1/completions``.
  ``structured`` adds ``structured_outputs: {json: schema}`` (mode "vllm") or an OpenAI
  ``response_format`` json_schema (mode "json_schema"; chat only).
- ``option_logprobs``: the conversation plus an assistant message holding ``answer_prefix``,
  ``continue_final_message: true, add_generation_prompt: false``, one token, log-probs. With
  ``exact_option_tokens`` the server's ``/tokenize`` gives each code's token id in context
  (``prefix+code`` minus ``prefix``); codes that are one token are asked for exactly
  (``logprob_token_ids``, ``return_tokens_as_token_ids``). Otherwise (no ``/tokenize``, or a
  multi-token code) the code is looked up by text among ``top_logprobs`` (20); a code not
  among them gets ``-inf``. Multi-token codes are scored by their first token only in exact
  mode's absence; use the in-process vLLM backend where that matters.
- ``loglikelihood``: ``/v1/completions`` with ``echo: true, max_tokens: 0, logprobs: 1``; the
  continuation is the echoed tokens covering its last ``len(continuation)`` characters.
  Requests still failing after the retry budget raise ``EngineError`` once the others are
  reported (``LoglikelihoodResult`` has no error field).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from socbench.engines.base import ResultSink
from socbench.errors import ConfigError, EngineError
from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, PromptRequest

log = logging.getLogger("socbench")
T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 300.0


class OpenAISettings(BaseModel):
    """How to reach the server; only ``model`` and ``structured_mode`` change answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base: tuple[str, ...]
    model: str
    api_key: SecretStr | None = None
    concurrent_requests: int = Field(64, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(6, ge=0)
    backoff_base_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    structured_mode: Literal["vllm", "json_schema", "none"] = "vllm"
    exact_option_tokens: bool = True
    top_logprobs: int = Field(20, ge=1)

    @field_validator("api_base", mode="before")
    @classmethod
    def _urls(cls, value: Any) -> tuple[str, ...]:
        urls = [u.strip() for u in (value.split(",") if isinstance(value, str) else value) if u.strip()]
        if not urls:
            raise ConfigError("--api_base: no URL given (expected http(s)://host:port)")
        for url in urls:
            try:
                parts = urlsplit(url)
                ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(f"--api_base {url!r} is not an http(s) URL")
        return tuple(url.rstrip("/").removesuffix("/v1") for url in urls)


def resolve_api_key(api_key_env: str = "OPENAI_API_KEY") -> SecretStr | None:
    """The key from the environment variable named ``api_key_env`` (keys never go on a command line)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
        raise ConfigError("--api_key_env must name an environment variable (the key itself is never a flag)")
    value = os.environ.get(api_key_env, "").strip()
    return SecretStr(value) if value else None


def answer_schema(codes: Sequence[str]) -> dict[str, Any]:
    """JSON schema of the one accepted reply: ``{"answer": "<offered code>"}``."""
    return {"type": "object", "properties": {"answer": {"type": "string", "enum": list(codes)}},
            "required": ["answer"], "additionalProperties": False}


class _Unusable(Exception):
    """A well-formed reply whose content cannot be used (asked once more, then an error)."""


@dataclass(frozen=True)
class _Call:
    path: str
    body: dict[str, Any]
    parse: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class _Reply:
    data: dict[str, Any] | None = None
    reason: str = ""
    retry: bool = False
    retry_after: float | None = None


def _run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine in a private event loop; in a worker thread if this thread runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[arg-type]
    with ThreadPoolExecutor(1, thread_name_prefix="socbench-openai") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


def _retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to backoff


class OpenAIEngine:
    """``Engine`` over an OpenAI-compatible server; nothing is held open between calls."""

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self._turn = count()
        self._random = random.Random()
        self._token_ids: dict[tuple[str, str], int | None] = {}
        self._tokenize_ok = settings.exact_option_tokens

    @property
    def identity(self) -> dict[str, str]:
        hosts = sorted(f"{urlsplit(u).hostname}:{urlsplit(u).port or ''}".rstrip(":") for u in self.settings.api_base)
        return {"backend": "openai", "model": self.settings.model, "api_base": ",".join(hosts),
                "structured_mode": self.settings.structured_mode,
                "option_tokens": "exact" if self.settings.exact_option_tokens else "top"}

    def close(self) -> None:
        """Nothing to release: each call opens and closes its own HTTP session."""

    # ------------------------------------------------------------------ Engine methods

    def generate(self, requests: Sequence[PromptRequest], on_result: ResultSink | None = None) -> list[EngineResult]:
        calls = [self._generate_call(r) for r in requests]
        return self._run_all(calls, lambda i, value, err: _result(requests[i].key, "text", value, err), on_result)

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        if self._tokenize_ok:
            self._learn_token_ids({(r.answer_prefix, c) for r in requests for c in r.offered_codes})
        calls = [self._logprobs_call(r) for r in requests]
        return self._run_all(calls, lambda i, value, err: _result(requests[i].key, "option_logprobs", value, err),
                             on_result)

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        failed: list[str] = []

        def finish(index: int, value: Any, error: str | None) -> LoglikelihoodResult | None:
            if error is not None:
                failed.append(error)
                return None
            return LoglikelihoodResult(requests[index].key, *value)

        calls = [self._loglikelihood_call(r) for r in requests]
        results = self._run_all(calls, finish, on_result, report=lambda r: r is not None)
        if failed:
            raise EngineError(f"{len(failed)} of {len(requests)} loglikelihood requests to "
                              f"{self.identity['api_base']} failed; first: {failed[0]}")
        return results

    # ------------------------------------------------------------------ request bodies

    def _sampling(self, request: PromptRequest) -> dict[str, Any]:
        s = request.sampling
        body = {"model": self.settings.model, "temperature": s.temperature, "top_p": s.top_p,
                "max_tokens": s.max_tokens}
        return body | ({"seed": s.seed} if s.seed is not None else {})

    def _generate_call(self, request: PromptRequest) -> _Call:
        body = self._sampling(request)
        mode = self.settings.structured_mode if request.structured else "none"
        if mode == "vllm":
            body["structured_outputs"] = {"json": answer_schema(request.offered_codes)}
        if not request.chat:
            return _Call("/v1/completions", body | {"prompt": _raw_text(request)}, _completion_text)
        if mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": answer_schema(request.offered_codes), "strict": True}}
        return _Call("/v1/chat/completions", body | {"messages": _messages(request)}, _chat_text)

    def _logprobs_call(self, request: PromptRequest) -> _Call:
        codes = request.offered_codes
        ids = {c: self._token_ids.get((request.answer_prefix, c)) for c in codes}
        exact = self._tokenize_ok and all(i is not None for i in ids.values())
        body: dict[str, Any] = {"model": self.settings.model, "max_tokens": 1, "temperature": 0.0}
        if exact:
            body |= {"logprob_token_ids": sorted(set(ids.values())), "return_tokens_as_token_ids": True}
        names = {f"token_id:{i}": c for c, i in ids.items()} if exact else None

        def parse(entries: list[tuple[str, float]]) -> dict[str, float]:
            return _pick_codes(entries, codes, names)

        if not request.chat:
            body |= {"prompt": _raw_text(request) + request.answer_prefix, "logprobs": self.settings.top_logprobs}
            return _Call("/v1/completions", body, lambda data: parse(_completion_top(data)))
        body |= {"messages": [*_messages(request), {"role": "assistant", "content": request.answer_prefix}],
                 "continue_final_message": True, "add_generation_prompt": False,
                 "logprobs": True, "top_logprobs": self.settings.top_logprobs}
        return _Call("/v1/chat/completions", body, lambda data: parse(_chat_top(data)))

    def _loglikelihood_call(self, request: LoglikelihoodRequest) -> _Call:
        body = {"model": self.settings.model, "prompt": request.context + request.continuation,
                "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0.0}
        return _Call("/v1/completions", body, lambda data: _continuation_score(data, len(request.continuation)))

    def _learn_token_ids(self, pairs: set[tuple[str, str]]) -> None:
        """Token id of each code after its prefix, from the server's /tokenize (vLLM)."""
        pairs -= self._token_ids.keys()
        texts = sorted(({p for p, _ in pairs} | {p + c for p, c in pairs}) - {""})
        if not pairs:
            return
        body = {"model": self.settings.model, "add_special_tokens": False}
        calls = [_Call("/tokenize", body | {"prompt": t}, lambda d: [int(i) for i in d["tokens"]]) for t in texts]
        found: dict[str, list[int]] = {"": []}
        errors: list[str] = []
        self._run_all(calls, lambda i, v, e: errors.append(e) if e else found.__setitem__(texts[i], v), None)
        if errors:
            self._tokenize_ok = not errors[0].startswith("HTTP 4")  # the server has no /tokenize
            log.info("%s: /tokenize failed (%s); option log-probs use the top %d tokens",
                     self.identity["api_base"], errors[0], self.settings.top_logprobs)
            return
        for prefix, code in pairs:
            head, full = found[prefix], found[prefix + code]
            one = len(full) == len(head) + 1 and full[:len(head)] == head
            self._token_ids[(prefix, code)] = full[-1] if one else None

    # ------------------------------------------------------------------ transport

    def _run_all(self, calls: list[_Call], finish: Callable[[int, Any, str | None], Any],
                 on_result: ResultSink | None, report: Callable[[Any], bool] = lambda r: True) -> list[Any]:
        """Send every call at once (at most ``concurrent_requests`` in flight); same order out."""
        if not calls:
            return []

        async def main() -> list[Any]:
            import aiohttp

            limit = self.settings.concurrent_requests
            gate = asyncio.Semaphore(limit)
            headers = {"Authorization": f"Bearer {self.settings.api_key.get_secret_value()}"} if self.settings.api_key else {}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit), headers=headers,
                                             timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s)) as session:

                async def one(index: int) -> Any:
                    value, error = await self._ask(session, gate, calls[index])
                    result = finish(index, value, error)
                    if on_result is not None and report(result):
                        on_result(index, result)
                    return result

                tasks = [asyncio.ensure_future(one(i)) for i in range(len(calls))]
                try:
                    return await asyncio.gather(*tasks)
                finally:  # a failing sink stops the call: cancel the rest before the session closes
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)

        return _run_sync(main)

    async def _ask(self, session: Any, gate: asyncio.Semaphore, call: _Call) -> tuple[Any, str | None]:
        """One request with retries: ``(value, None)`` or ``(None, reason)``."""
        reason, unusable = "", 0
        attempts, bases, first = self.settings.max_retries + 1, self.settings.api_base, next(self._turn)
        for attempt in range(attempts):
            async with gate:  # round-robin; a retry goes to the next server
                reply = await self._post(session, bases[(first + attempt) % len(bases)] + call.path, call.body)
            if reply.data is not None:
                try:
                    return call.parse(reply.data), None
                except _Unusable as exc:
                    unusable += 1
                    if unusable > 1:
                        return None, self._redact(str(exc))
                    reply = _Reply(reason=str(exc), retry=True)
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    reply = _Reply(reason=f"malformed response ({type(exc).__name__}: {exc})"[:200], retry=True)
            reason = self._redact(reply.reason)
            if not reply.retry:
                return None, reason
            if attempt + 1 < attempts:
                log.debug("retrying %s after attempt %d: %s", call.path, attempt + 1, reason)
                await asyncio.sleep(self._delay(attempt, reply.retry_after))
        return None, f"gave up after {attempts} attempts: {reason}"

    async def _post(self, session: Any, url: str, body: dict[str, Any]) -> _Reply:
        import aiohttp

        try:
            async with session.post(url, json=body) as response:
                status, text = response.status, await response.text()
                retry_after = _retry_after(response.headers.get("Retry-After"))
        except TimeoutError:
            return _Reply(reason=f"no response within {self.settings.timeout_s:g} s", retry=True)
        except aiohttp.ClientError as exc:
            return _Reply(reason=f"connection error ({type(exc).__name__}: {exc})", retry=True)
        except UnicodeDecodeError:
            return _Reply(reason="response body is not text", retry=True)
        if status != 200:
            return _Reply(reason=f"HTTP {status}: {' '.join(text.split())[:200]}", retry=status in RETRY_STATUS,
                          retry_after=retry_after)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return _Reply(reason=f"malformed JSON body ({len(text)} bytes)", retry=True)
        if not isinstance(data, dict):
            return _Reply(reason="JSON body is not an object", retry=True)
        return _Reply(data=data)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        cap = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** attempt)
        return self._random.uniform(0, cap)  # full jitter

    def _redact(self, text: str) -> str:
        key = self.settings.api_key.get_secret_value() if self.settings.api_key else ""
        return text.replace(key, "***") if key else text


# ---------------------------------------------------------------------- reply parsing


def _result(key: str, field: str, value: Any, error: str | None) -> EngineResult:
    return EngineResult(key, error=error) if error is not None else EngineResult(key, **{field: value})


def _messages(request: PromptRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


def _raw_text(request: PromptRequest) -> str:
    return "".join(m.content for m in request.messages)


def _content(text: Any) -> str:
    if text is None:
        raise _Unusable("the server returned null content")
    if not isinstance(text, str) or not text.strip():
        raise _Unusable("the server returned empty content")
    return text


def _chat_text(data: dict[str, Any]) -> str:
    return _content(data["choices"][0]["message"]["content"])


def _completion_text(data: dict[str, Any]) -> str:
    return _content(data["choices"][0]["text"])


def _chat_top(data: dict[str, Any]) -> list[tuple[str, float]]:
    logprobs = data["choices"][0].get("logprobs") or {}
    content = logprobs.get("content")
    if not content:
        raise _Unusable("the server returned no log-probs")
    return [(e["token"], float(e["logprob"])) for e in content[0]["top_logprobs"]]


def _completion_top(data: dict[str, Any]) -> list[tuple[str, float]]:
    logprobs = data["choices"][0].get("logprobs") or {}
    if not logprobs.get("top_logprobs") or not logprobs["top_logprobs"][0]:
        raise _Unusable("the server returned no log-probs")
    return [(token, float(lp)) for token, lp in logprobs["top_logprobs"][0].items()]


def _pick_codes(entries: list[tuple[str, float]], codes: Sequence[str],
                names: dict[str, str] | None) -> dict[str, float]:
    """Log-prob of each code: by token id when asked exactly, else by its text (-inf if absent)."""
    out = dict.fromkeys(codes, -math.inf)
    for token, logprob in entries:
        code = names.get(token) if names is not None else token.strip()
        if code in out:
            out[code] = max(out[code], logprob)
    if all(v == -math.inf for v in out.values()):
        raise _Unusable("none of the offered codes is among the server's log-probs")
    return out


def _continuation_score(data: dict[str, Any], n_chars: int) -> tuple[float, int, bool]:
    """(sum of log-probs, token count, greedy?) of the echoed tokens covering the last n_chars."""
    lp = data["choices"][0]["logprobs"]
    tokens, offsets, logprobs, tops = lp["tokens"], lp["text_offset"], lp["token_logprobs"], lp["top_logprobs"]
    end = offsets[-1] + len(tokens[-1])
    picked = [i for i in range(len(tokens)) if offsets[i] + len(tokens[i]) > end - n_chars]
    if not picked or any(logprobs[i] is None for i in picked):
        raise _Unusable("no scored continuation tokens in the echoed prompt")
    greedy = all(logprobs[i] >= max((tops[i] or {}).values(), default=logprobs[i]) - 1e-6 for i in picked)
    return sum(logprobs[i] for i in picked), len(picked), greedy
