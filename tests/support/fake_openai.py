"""A small OpenAI-compatible server with deterministic answers and seeded fault injection.

In tests: ``with FakeOpenAIServer(latency_ms=20, faults={"500": 0.1}) as server: server.url``
(127.0.0.1, a free port, served from a background thread). As a script, from ``tests/``:
``python -m support.fake_openai --port 8001 --latency-ms 100 --fault 429=0.1``
(binds 127.0.0.1 only).

Answers: ``{"answer": "<code>"}`` with the code picked by a hash of the prompt among the
options listed in it (lines ``<id>. text``), or among the enum of a requested JSON schema;
log-probs as ``fake_model`` describes. Faults: a request whose hash falls in a fault's share
fails on its first ``fail_attempts`` attempts (the attempt number is how often the server has
seen that exact body), so which requests fail, and how, is a pure function of (seed,
request, attempt): see ``FakeConfig.fault_for``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from .fake_model import Answer, FakeModel, fake_tokens, pick_code, rendered, token_logprob
from .waiting import wait_for

__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIServer", "FakeStats",
           "fake_tokens", "pick_code", "token_logprob"]

FAULT_KINDS = ("401", "500", "502", "503", "429", "timeout", "drop",
               "null", "empty", "garbage", "truncated", "prose")


@dataclass(frozen=True)
class FakeConfig:
    """Behaviour of the fake server (latency, faults, answers)."""

    model: str = "fake-model"
    latency_ms: float = 0.0
    seed: int = 0
    faults: dict[str, float] = field(default_factory=dict)  # kind -> share of requests failing
    fail_attempts: int = 1  # how many attempts of a faulted request fail (large: always)
    retry_after_s: float = 0.05
    hang_s: float = 5.0  # how long a "timeout" fault keeps the client waiting
    down_for_s: float = 0.0  # refuse connections (not listening) this long after start; inf: until listen()
    tokenize: bool = True  # serve vLLM's /tokenize (False: 404, like OpenAI)
    structured_outputs: bool = True  # accept vLLM's structured_outputs (False: HTTP 400, like OpenAI)
    capacity: int = 0  # completions served at once; the rest wait in a queue (0: no limit)
    answer: Answer | None = None  # (prompt, codes) -> content
    reasoning_tokens: int = 0  # every reply reports this many reasoning tokens (in its completion tokens)
    max_model_len: int = 0  # a request whose prompt and max_tokens exceed it is HTTP 400, as vLLM's (0: none)

    def fault_for(self, request_id: str, attempt: int) -> str | None:
        """The fault for this attempt of this request, or None (deterministic)."""
        if attempt >= self.fail_attempts:
            return None
        point, total = _unit(f"{self.seed}:{request_id}"), 0.0
        for kind in FAULT_KINDS:
            total += self.faults.get(kind, 0.0)
            if point < total:
                return kind
        return None


def _unit(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16 ** 12


@dataclass
class FakeStats:
    """What the server saw; read it through ``FakeOpenAIServer.stats()`` (a copy)."""

    requests: int = 0  # POSTs to completion endpoints
    with_auth: int = 0  # of those, how many carried an Authorization header
    by_path: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)  # "200", "503", "drop", ...
    faults: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    attempts: Counter = field(default_factory=Counter)  # request id -> times seen
    last_body: dict | None = None  # the JSON body of the latest completion request
    usage: Counter = field(default_factory=Counter)  # the sum of every reply's usage (reasoning tokens too)


class _Handlers:
    """Request handlers over one config and one stats record (all on the server's loop)."""

    def __init__(self, config: FakeConfig) -> None:
        self.config = config
        self.stats = FakeStats()
        self.model = FakeModel(config.model, config.answer, config.reasoning_tokens)
        self.awake = asyncio.Event()  # cleared: the server hangs (accepts, never answers)
        self.awake.set()
        self.slots = asyncio.Semaphore(config.capacity) if config.capacity else None

    async def models(self, request: web.Request) -> web.Response:
        await self.awake.wait()
        return web.json_response({"object": "list", "data": [{"id": self.config.model, "object": "model"}]})

    async def tokenize(self, request: web.Request) -> web.Response:
        self.stats.by_path[request.path] += 1
        await self.awake.wait()
        if not self.config.tokenize:
            raise web.HTTPNotFound()
        ids = self.model.tokenize(rendered(await request.json()))
        return web.json_response({"count": len(ids), "tokens": ids, "max_model_len": 4096})

    async def complete(self, request: web.Request) -> web.StreamResponse:
        stats = self.stats
        stats.requests += 1
        stats.by_path[request.path] += 1
        stats.with_auth += "Authorization" in request.headers
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            raw = await request.read()
            request_id = hashlib.sha256(request.path.encode() + raw).hexdigest()
            attempt = stats.attempts[request_id]
            stats.attempts[request_id] += 1
            await self.awake.wait()
            if self.slots is not None:
                async with self.slots:  # a queue: waiting here is the server's, not the client's, delay
                    await asyncio.sleep(self.config.latency_ms / 1000)
            else:
                await asyncio.sleep(self.config.latency_ms / 1000)
            fault = self.config.fault_for(request_id, attempt)
            if fault:
                stats.faults[fault] += 1
            stats.last_body = json.loads(raw)
            response = await self._respond(request, stats.last_body, fault)
            stats.statuses[str(response.status) if response is not None else "drop"] += 1
            if response is None:
                request.transport.abort()  # type: ignore[union-attr]
                return web.Response()
            return response
        finally:
            stats.in_flight -= 1

    def _too_long(self, body: dict[str, Any]) -> str | None:
        """vLLM's refusal of a request past ``max_model_len`` (prompt tokens and max_tokens), or None."""
        limit = self.config.max_model_len
        if not limit:  # no limit: no tokenizing (a third of the server's CPU per request in bench/api_path)
            return None
        asked = len(fake_tokens(rendered(body))) + int(body.get("max_tokens") or 0)
        if asked <= limit:
            return None
        return f"This model's maximum context length is {limit} tokens. However, you requested {asked} tokens"

    async def _respond(self, request: web.Request, body: dict[str, Any],
                       fault: str | None) -> web.Response | None:
        """The response for this attempt (None: drop the connection)."""
        if (too_long := self._too_long(body)) is not None:
            return web.json_response({"error": {"message": too_long}}, status=400)
        if "structured_outputs" in body and not self.config.structured_outputs:  # as OpenAI answers it
            error = {"error": {"message": "Unrecognized request argument supplied: structured_outputs"}}
            return web.json_response(error, status=400)
        if fault == "401":  # like OpenAI's "Incorrect API key provided: ...", echoing the key
            message = f"bad key {request.headers.get('Authorization')}"
            return web.json_response({"error": {"message": message}}, status=401)
        if fault in ("500", "502", "503", "429"):
            headers = {"Retry-After": f"{self.config.retry_after_s:g}"} if fault == "429" else None
            error = {"error": {"message": f"injected {fault}"}}
            return web.json_response(error, status=int(fault), headers=headers)
        if fault == "drop":
            return None
        if fault == "timeout":
            await asyncio.sleep(self.config.hang_s)
        if fault == "garbage":
            return web.Response(text="<html>502 Bad Gateway</html>", content_type="application/json")
        payload = self.model.reply(request.path.endswith("/chat/completions"), body, fault)
        if fault != "truncated":  # a reply the client can read: what it is charged
            used = payload["usage"]
            self.stats.usage.update({key: used[key] for key in ("prompt_tokens", "completion_tokens")},
                                    reasoning_tokens=used["completion_tokens_details"]["reasoning_tokens"])
        text = json.dumps(payload)
        return web.Response(text=text[: len(text) // 2] if fault == "truncated" else text,
                            content_type="application/json")


def make_app(model: _Handlers) -> web.Application:
    app = web.Application()
    app.router.add_get("/v1/models", model.models)
    app.router.add_post("/v1/chat/completions", model.complete)
    app.router.add_post("/v1/completions", model.complete)
    app.router.add_post("/tokenize", model.tokenize)
    return app


class FakeOpenAIServer:
    """The fake server on 127.0.0.1 in a background thread; a context manager."""

    def __init__(self, config: FakeConfig | None = None, port: int = 0, **overrides: Any) -> None:
        self.config = replace(config or FakeConfig(), **overrides)
        self._model = _Handlers(self.config)
        self._requested_port = port
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.SockSite | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> FakeStats:
        """A snapshot of the counters (taken on the server's loop)."""
        def copy() -> FakeStats:
            s = self._model.stats
            return replace(s, by_path=Counter(s.by_path), statuses=Counter(s.statuses),
                           faults=Counter(s.faults), attempts=Counter(s.attempts), usage=Counter(s.usage))
        return self._call(copy)

    def wait_idle(self, timeout_s: float = 60) -> FakeStats:
        """The stats once no request is being served (a killed client's requests still finish)."""
        def idle() -> FakeStats | None:
            stats = self.stats()
            return stats if stats.in_flight == 0 else None

        stats = wait_for(idle, timeout_s)
        assert stats is not None, f"requests still being served after {timeout_s:.0f} s: {self.stats()}"
        return stats

    def reset_stats(self) -> None:
        self._call(lambda: setattr(self._model, "stats", FakeStats()))

    def hang(self) -> None:
        """Stop answering anything (connections are accepted; requests wait) until ``wake()``."""
        self._call(self._model.awake.clear)

    def wake(self) -> None:
        self._call(self._model.awake.set)

    def listen(self) -> None:
        """Start listening now (a server made with ``down_for_s=math.inf`` refuses connections until then)."""
        asyncio.run_coroutine_threadsafe(self._site.start(), self._loop).result(10)  # type: ignore[arg-type]

    def start(self) -> FakeOpenAIServer:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        runner = self._runner
        asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(10)  # type: ignore[union-attr]
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def app(self) -> web.Application:
        """The served routes (a sibling server adds its own: ``fake_batch``)."""
        return make_app(self._model)

    def _call(self, fn: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)  # type: ignore[arg-type]

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._open())
        ready.set()
        loop.run_forever()
        loop.close()

    async def _open(self) -> None:
        """Bind now (so the port is known); listen after ``down_for_s`` (refused until then)."""
        self._runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._requested_port))
        self.port = sock.getsockname()[1]
        self._site = site = web.SockSite(self._runner, sock)
        if self.config.down_for_s == 0:
            await site.start()
        elif math.isfinite(self.config.down_for_s):
            later = lambda: asyncio.ensure_future(site.start())  # noqa: E731
            asyncio.get_running_loop().call_later(self.config.down_for_s, later)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m support.fake_openai",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fault", action="append", default=[], metavar="KIND=SHARE",
                        help=f"share of requests failing with KIND, one of {', '.join(FAULT_KINDS)}")
    parser.add_argument("--fail-attempts", type=int, default=1)
    parser.add_argument("--retry-after-s", type=float, default=0.05)
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--down-for-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    try:
        args.faults = {k: float(v) for k, v in (f.split("=", 1) for f in args.fault)}
    except ValueError:
        parser.error("--fault expects KIND=SHARE, e.g. 503=0.1")
    if unknown := set(args.faults) - set(FAULT_KINDS):
        parser.error(f"unknown fault kind(s) {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    config = FakeConfig(model=args.model, latency_ms=args.latency_ms, seed=args.seed, faults=args.faults,
                        fail_attempts=args.fail_attempts, retry_after_s=args.retry_after_s,
                        hang_s=args.hang_s, down_for_s=args.down_for_s)
    server = FakeOpenAIServer(config, port=args.port).start()
    print(f"fake OpenAI server on {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
