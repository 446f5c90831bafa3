"""OpenAI-compatible HTTP backend (a vLLM server, OpenAI, ...); transport and retries: ``_http.py``.

A reply with unusable content is asked once more, then is an ``EngineResult`` with ``error``; the API key
never leaves the Authorization header. vLLM-server extensions serve where the OpenAI API has none: the
in-process backend's ``structured_outputs`` regex (greedy answers agree), ``/tokenize`` and
``logprob_token_ids`` for option scoring by ``_chat``'s rule; without ``/tokenize`` codes are looked up
among the ``top_logprobs`` (multi-token codes get ``-inf``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from pydantic import SecretStr

from socbench.engines import _chat, _http
from socbench.engines._http import Call, Transport, host
from socbench.engines.base import ResultSink
from socbench.engines.batch import BatchTransport
from socbench.engines.openai_settings import OpenAISettings
from socbench.engines.usage import UsageMeter
from socbench.errors import ConfigError, EngineError
from socbench.types import (
    EngineResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    Message,
    PromptRequest,
    SamplingSettings,
)

log = logging.getLogger("socbench")


def resolve_api_key(api_key_env: str = "OPENAI_API_KEY") -> SecretStr | None:
    """The key from the environment variable named ``api_key_env`` (keys never go on a command line)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
        raise ConfigError("--api_key_env must name an environment variable (the key itself is never a flag)")
    value = os.environ.get(api_key_env, "").strip()
    return SecretStr(value) if value else None


class OpenAIEngine:
    """``Engine`` over an OpenAI-compatible server; nothing is held open between calls."""

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self._http = Transport(settings)  # /tokenize and the preflight's probe: always direct
        self.usage: UsageMeter = self._http.usage  # every reply's tokens, batches' too
        self._send: Transport | BatchTransport = \
            BatchTransport(settings, self.usage, _show_status) if settings.batch else self._http
        self._tokens: dict[str, list[int]] = {"": []}  # text -> the server's token ids (/tokenize)
        self._tokenize_ok = settings.exact_option_tokens

    @property
    def identity(self) -> dict[str, str]:
        hosts = sorted(host(base) for base in self.settings.api_base)
        return {"backend": "openai", "model": self.settings.model, "api_base": ",".join(hosts),
                "structured_mode": self.settings.structured_mode,
                "option_tokens": "exact" if self.settings.exact_option_tokens else "top"}

    def close(self) -> None:
        """Nothing to release: each call opens and closes its own HTTP session."""

    def planned(self, method: str, requests: Sequence[Any]) -> tuple[list[int], list[int] | None]:
        """For ``--dry_run``: how many requests each of ``requests`` takes (option scoring: one per code
        where a code is several tokens) and its prompt's tokens by ``/tokenize`` (None: not answered)."""
        calls = [1] * len(requests)
        if method == "option_logprobs":
            calls = [len(r.offered_codes) if plan.method == "continuation" else int(bool(r.offered_codes))
                     for r, plan in zip(requests, self._plans(requests))]
        once = Transport(self.settings.model_copy(update={"max_retries": 1}))

        def ask(request: Any) -> Call:
            return Call("/tokenize", self._tokenize_body(request), lambda data: int(data["count"]))

        counts: list[int] = []
        for part in (requests[:1], requests[1:]):  # the first alone: a server without /tokenize is asked once
            found = once.run_all(LazyCalls(part, ask), lambda i, n, error: n if error is None else None)
            if None in found:
                return calls, None
            counts += found
        return calls, counts

    def check_structured(self) -> None:
        """One tiny constrained request: a server rejecting or ignoring it is one ConfigError before a run."""
        if self.settings.structured_mode == "none":
            return
        codes, where = ("1", "2"), f"the server at {self.identity['api_base']}"
        text = 'Answer as JSON, {"answer": "<code>"}.\n1. Yes\n2. No'
        probe = PromptRequest(item_id="preflight", messages=(Message("user", text),), offered_codes=codes,
                              structured=True, sampling=SamplingSettings(max_tokens=16))
        # one request, direct (never a batch); a structured reply has no prefix to add
        reply, error = self._http.run_all([self._generate_call(probe)], lambda i, *answer: answer)[0]
        hint = ("run with --no-structured, or --engine '{\"structured_mode\": \"json_schema\"}' for a server "
                "with OpenAI's response_format")
        if error is not None and error.startswith(("HTTP 400", "HTTP 422")):
            raise ConfigError(f"--structured: {where} rejected the constrained request "
                              f"({self.settings.structured_mode}: {error[:160]}); {hint}")
        if error is not None:
            raise EngineError(f"--api_base: {where} failed a test request: {error[:200]}")
        if not _honours(reply or "", codes, self.settings.structured_mode):
            raise ConfigError(f"--structured: {where} ignored the constraint (it replied "
                              f"{(reply or '')[:60]!r}); {hint}")

    def generate(self, requests: Sequence[PromptRequest],
                 on_result: ResultSink | None = None) -> list[EngineResult]:
        results = _chat.Results(requests, on_result)

        def finish(i: int, text: str | None, error: str | None) -> None:
            text = None if error is not None else _chat.started(requests[i]) + text
            results[i] = EngineResult(requests[i].key, text=text, error=error)

        self._send.run_all(LazyCalls(requests, self._generate_call), finish)
        return results

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        plans = self._plans(requests)
        owners = [(i, code, call) for i, r in enumerate(requests) if r.offered_codes
                  for code, call in self._option_calls(r, plans[i])]
        pending = Counter(i for i, _, _ in owners)
        parts: dict[int, dict[str, float]] = defaultdict(dict)
        errors: dict[int, str] = {}
        results = _chat.Results(requests, on_result)

        def finish(j: int, value: Any, error: str | None) -> None:
            i, code, _ = owners[j]
            if error is not None:
                errors.setdefault(i, error)
            else:
                parts[i].update(value if code is None else {code: value})
            pending[i] -= 1
            if pending[i] == 0:
                key, codes = requests[i].key, requests[i].offered_codes
                results[i] = EngineResult(key, error=errors[i]) if i in errors else \
                    EngineResult(key, option_logprobs={c: parts[i][c] for c in codes})

        for i, request in enumerate(requests):
            if not request.offered_codes:
                results[i] = EngineResult(request.key, error="no offered codes")
        self._send.run_all([call for _, _, call in owners], finish)
        return results

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        failed: list[str] = []
        results = _chat.Results(requests, on_result)

        def finish(i: int, value: Any, error: str | None) -> None:
            if error is not None:
                failed.append(error)
            else:
                results[i] = LoglikelihoodResult(requests[i].key, *value)

        self._send.run_all([self._loglikelihood_call(r) for r in requests], finish)
        if failed:
            raise EngineError(f"{len(failed)} of {len(requests)} loglikelihood requests to "
                              f"{self.identity['api_base']} failed; first: {failed[0]}")
        return results

    def _body(self, request: PromptRequest, **extra: Any) -> dict[str, Any]:
        """Model, sampling and the prompt: chat messages (with an assistant prefix) or raw text."""
        s = request.sampling
        body = {"model": self.settings.model, "temperature": s.temperature, "top_p": s.top_p,
                "max_tokens": s.max_tokens} | ({"seed": s.seed} if s.seed is not None else {})
        prefix = extra.pop("prefix", "")
        if not request.chat:
            return body | {"prompt": "".join(m.content for m in request.messages) + prefix} | extra
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if prefix:
            messages.append({"role": "assistant", "content": prefix})
            body |= {"continue_final_message": True, "add_generation_prompt": False}
        return body | {"messages": messages} | extra

    def _tokenize_body(self, request: PromptRequest | LoglikelihoodRequest) -> dict[str, Any]:
        """vLLM's ``/tokenize`` request for the prompt ``request`` sends (chat or raw text)."""
        if isinstance(request, LoglikelihoodRequest):
            return {"model": self.settings.model, "prompt": request.context + request.continuation}
        body = self._body(request, prefix=_chat.started(request))
        keys = ("model", "prompt", "messages", "add_generation_prompt", "continue_final_message")
        return {key: body[key] for key in keys if key in body}

    def _generate_call(self, request: PromptRequest) -> Call:
        body = self._body(request, prefix=_chat.started(request))
        mode = self.settings.structured_mode if request.structured else "none"
        if mode == "regex":
            body["structured_outputs"] = {"regex": _chat.constraint_regex(request)}
        elif mode == "json_schema" and request.chat:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": _chat.answer_schema(request), "strict": True}}
        return Call(_path(request), body, partial(_http.reply_text, chat=request.chat))

    def _option_calls(self, request: PromptRequest,
                      plan: _chat.OptionPlan) -> list[tuple[str | None, Call]]:
        """(code, or None for all codes, call) pairs scoring one request by its plan."""
        codes, prefix, tokens = request.offered_codes, request.answer_prefix, plan.continuations
        one_token = {"max_tokens": 1, "temperature": 0.0, "top_p": 1.0}
        if plan.method == "continuation":
            return [(code, Call(_path(request), self._body(request, prefix=prefix + code + plan.suffix,
                                                                 prompt_logprobs=0, **one_token),
                                 partial(_http.prompt_tail_logprob, expected=tokens[code])))
                    for code in codes]
        names = {f"token_id:{tokens[c][0]}": c for c in codes} if plan.method == "single_token" else None
        asks = {"logprob_token_ids": sorted({t[0] for t in tokens.values()}),
                "return_tokens_as_token_ids": True} if names else {}
        logprobs = {"logprobs": True, "top_logprobs": self.settings.top_logprobs} if request.chat else \
            {"logprobs": self.settings.top_logprobs}
        started = prefix.rstrip() if names else prefix  # single tokens carry the prefix's trailing space
        body = self._body(request, prefix=started, **one_token, **logprobs, **asks)
        return [(None, Call(_path(request), body, partial(_http.pick_codes, codes=codes, names=names)))]

    def _loglikelihood_call(self, request: LoglikelihoodRequest) -> Call:
        body = {"model": self.settings.model, "prompt": request.context + request.continuation,
                "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0.0}
        parse = partial(_http.continuation_score, n_chars=len(request.continuation))
        return Call("/v1/completions", body, parse)

    def _plans(self, requests: Sequence[PromptRequest]) -> list[_chat.OptionPlan]:
        """Scoring plan per request, from the server's /tokenize (vLLM) where it has one."""
        texts = set().union(*(_chat.server_texts(r.answer_prefix, r.offered_codes) for r in requests))
        todo = sorted(texts - self._tokens.keys()) if self._tokenize_ok else []
        body = {"model": self.settings.model, "add_special_tokens": False}
        ids = lambda d: list(map(int, d["tokens"]))  # noqa: E731
        calls = [Call("/tokenize", body | {"prompt": t}, ids) for t in todo]
        errors: list[str] = []
        store = self._tokens.__setitem__
        self._http.run_all(calls, lambda i, v, e: errors.append(e) if e else store(todo[i], v))
        if errors:
            self._tokenize_ok = not errors[0].startswith("HTTP 4")  # 4xx: the server has no /tokenize
            log.info("%s: /tokenize failed (%s); option log-probs use the top %d tokens",
                     self.identity["api_base"], errors[0], self.settings.top_logprobs)
        tokens = self._tokens if self._tokenize_ok and not errors else None
        return [_chat.server_plan(r.answer_prefix, r.offered_codes, tokens) for r in requests]


class LazyCalls(Sequence[Call]):
    """``make(item)`` for each item, made when it is sent: a whole survey's request bodies at once were
    gigabytes (``windowed`` holds a window's)."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Call]) -> None:
        self.items, self.make = items, make

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:  # int indices only: calls are sent one by one, never sliced
        return self.make(self.items[index])


def _honours(text: str, codes: tuple[str, ...], mode: str) -> bool:
    """Whether a constrained reply is what the constraint allows (json_schema: any JSON spacing)."""
    if mode == "regex":
        return re.fullmatch(_chat.answer_regex(codes), text) is not None
    try:
        reply = json.loads(text)
    except ValueError:
        return False
    return isinstance(reply, dict) and set(reply) == {"answer"} and reply["answer"] in codes


def _path(request: PromptRequest) -> str:
    return "/v1/chat/completions" if request.chat else "/v1/completions"


def _show_status(line: str) -> None:
    """A batch's state while it is waited for: the run's log and the CLI's progress display (whose listener
    exists only where ``socbench.progress`` is imported: an engine alone does not pay for its imports)."""
    log.info("%s", line)
    progress = sys.modules.get("socbench.progress")
    if progress is not None:
        progress.status(line)

