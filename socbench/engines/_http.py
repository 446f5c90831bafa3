"""HTTP transport of the OpenAI-compatible backend, and reading its replies: at most ``concurrent_requests``
in flight; full-jitter retries (``Retry-After`` honoured) for 429/408/409/5xx, dropped connections and
malformed bodies.

A busy server can take minutes per request while healthy, so a request is cut only when its server has
been *silent* for ``timeout_s`` (nor answering a watchdog's ``GET /v1/models``): then its in-flight
requests are retried, and the base is down until a probe is answered. ``max_request_s`` caps any request.
Parsers raise ``Unusable`` for a well-formed reply with unusable content (asked once more) and
KeyError/TypeError/... for a malformed one (retried).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count, takewhile
from typing import Any, TypeVar
from urllib.parse import urlsplit

from socbench.engines.openai_settings import OpenAISettings
from socbench.engines.usage import UsageMeter

log = logging.getLogger("socbench")
T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 300.0
PROBE_PATH = "/v1/models"
WINDOW = 1024  # calls started at once, at least (the OpenAI transport: 4 x concurrent_requests above that)


@dataclass(frozen=True)
class Call:
    path: str
    body: dict[str, Any]
    parse: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Reply:
    data: dict[str, Any] | None = None
    reason: str = ""
    retry: bool = False
    retry_after: float | None = None


class Unusable(Exception):
    """A well-formed reply whose content cannot be used. ``reply``: what the model said when asked
    again gave the same (an empty text is its answer); None: nothing usable (an engine error)."""

    def __init__(self, reason: str, reply: str | None = None) -> None:
        super().__init__(reason)
        self.reply = reply


def reply_text(data: dict[str, Any], chat: bool) -> str:
    """The reply's text, chat or completions shape."""
    choice = data["choices"][0]
    text = choice["message"]["content"] if chat else choice["text"]
    if text is None:
        raise Unusable("the server returned null content", reply="")
    if not isinstance(text, str) or not text.strip():
        raise Unusable("the server returned empty content", reply=text if isinstance(text, str) else "")
    return text


def pick_codes(data: dict[str, Any], codes: Sequence[str], names: dict[str, str] | None) -> dict[str, float]:
    """Log-prob of each code among the first generated position's (chat or completions shape): by token
    name (``token_id:N``) when asked exactly, else by text."""
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


class _Liveness:
    """What one base URL has shown of life during a batch; the watchdog probes and judges it."""

    def __init__(self, base: str, now: float) -> None:
        self.base, self.heard = base, now
        self.down: str | None = None  # why the base is considered down, while it is
        self.sending: set[asyncio.Future[Any]] = set()  # the attempts in flight, cancelled when it goes down


@dataclass(frozen=True)
class _Batch:
    http: Any  # aiohttp.ClientSession
    gate: asyncio.Semaphore
    lives: dict[str, _Liveness]


def host(base: str) -> str:
    parts = urlsplit(base)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine in a private event loop; in a worker thread if this thread runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[arg-type]
    with ThreadPoolExecutor(1, thread_name_prefix="socbench-openai") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header's seconds, capped (an HTTP date: None, backoff instead)."""
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value else None
    except ValueError:
        return None


def backoff(settings: OpenAISettings, attempt: int, after: float | None = None) -> float:
    """Seconds before the next attempt, for both transports: ``Retry-After`` if the server gave one, else
    full jitter up to ``backoff_base_s * 2^attempt`` (at most ``backoff_max_s``)."""
    if after is not None:
        return after
    return random.uniform(0, min(settings.backoff_max_s, settings.backoff_base_s * 2 ** attempt))


def redact(settings: OpenAISettings, text: str) -> str:
    """``text`` without the API key (a server may echo it in an error)."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return text.replace(key, "***") if key else text


def session(settings: OpenAISettings, **options: Any) -> Any:
    """An ``aiohttp.ClientSession`` with the key's header and the timeouts (both transports)."""
    import aiohttp

    headers = {"Authorization": f"Bearer {settings.api_key.get_secret_value()}"} if settings.api_key else {}
    timeout = aiohttp.ClientTimeout(total=settings.max_request_s, sock_connect=settings.connect_timeout_s)
    return aiohttp.ClientSession(headers=headers, timeout=timeout, **options)


async def windowed(count: int, run: Callable[[int], Awaitable[T]], window: int) -> list[T]:
    """``run(i)`` for each ``i < count`` in order, at most ``window`` of them started and unfinished at once
    (``window`` workers); the results in order. The first that raises (a failing sink) cancels the rest and
    is raised. A whole survey's requests (millions) are so made and started a window at a time, never all at
    once (a task per call made up front held every call's coroutine, and a task and a request body per call
    were gigabytes at a whole module's 2.8 million)."""
    results: list[Any] = [None] * count
    failed: list[BaseException] = []
    # shared by the workers: each takes the next call when its own is done, none once one has failed
    indices = takewhile(lambda _: not failed, range(count))

    async def worker() -> None:
        try:
            for index in indices:
                results[index] = await run(index)
        except BaseException as exc:
            failed.append(exc)
            raise

    try:
        async with asyncio.TaskGroup() as group:  # a worker that raises cancels the others at once
            for _ in range(min(window, count)):
                group.create_task(worker())
    except BaseExceptionGroup as exc:
        raise exc.exceptions[0] from None
    return results


class Transport:
    """Sends batches of calls; nothing is held open between batches. ``usage``: the tokens every reply
    reported, unusable and retried ones included."""

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self.usage = UsageMeter()
        self._turn = count()

    def run_all(self, calls: list[Call], finish: Callable[[int, Any, str | None], Any]) -> list[Any]:
        """Send every call (at most ``concurrent_requests`` in flight); ``finish(i, value, error)`` each.
        What lived before is left out of the garbage collector's walks meanwhile (``gc.freeze``): a run
        holds its data and modules (10^5-10^6 objects), and each full collection among the requests walked
        them all."""
        if not calls:
            return []
        gc.freeze()
        try:
            return run_sync(lambda: self._main(calls, finish))
        finally:
            gc.unfreeze()

    async def _main(self, calls: Sequence[Call], finish: Callable[[int, Any, str | None], Any]) -> list[Any]:
        import aiohttp

        s = self.settings
        connector = aiohttp.TCPConnector(limit=s.concurrent_requests + len(s.api_base))  # + one probe each
        now = asyncio.get_running_loop().time()
        async with session(s, connector=connector) as http:
            batch = _Batch(http, asyncio.Semaphore(s.concurrent_requests),
                           {base: _Liveness(base, now) for base in s.api_base})

            async def one(index: int) -> Any:
                return finish(index, *await self._ask(batch, calls[index]))

            watchdogs = [asyncio.ensure_future(self._watch(http, live)) for live in batch.lives.values()]
            try:
                return await windowed(len(calls), one, max(4 * s.concurrent_requests, WINDOW))
            finally:
                for task in watchdogs:
                    task.cancel()
                await asyncio.gather(*watchdogs, return_exceptions=True)

    async def _ask(self, batch: _Batch, call: Call) -> tuple[Any, str | None]:
        """One call with retries: ``(value, None)`` or ``(None, reason)``."""
        reason, unusable = "", 0
        attempts, bases, first = self.settings.max_retries + 1, self.settings.api_base, next(self._turn)
        for attempt in range(attempts):
            async with batch.gate:  # round-robin; a retry goes to the next server
                live = batch.lives[bases[(first + attempt) % len(bases)]]
                reply = await self._post(batch.http, live, call)
            if reply.data is not None:
                try:
                    return call.parse(reply.data), None
                except Unusable as exc:
                    unusable += 1
                    if unusable > 1:  # the same twice: the model's (empty) reply, or nothing usable
                        return (exc.reply, None) if exc.reply is not None else \
                            (None, redact(self.settings, str(exc)))
                    reply = Reply(reason=str(exc), retry=True)
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    malformed = f"malformed response ({type(exc).__name__}: {exc})"[:200]
                    reply = Reply(reason=malformed, retry=True)
            reason = redact(self.settings, reply.reason)
            if not reply.retry:
                return None, reason
            if attempt + 1 < attempts:
                log.debug("retrying %s after attempt %d: %s", call.path, attempt + 1, reason)
                await asyncio.sleep(backoff(self.settings, attempt, reply.retry_after))
        return None, f"gave up after {attempts} attempts: {reason}"

    async def _post(self, http: Any, live: _Liveness, call: Call) -> Reply:
        """One attempt, given up when the base goes down meanwhile (it fails at once while down)."""
        if live.down is not None:
            return Reply(reason=live.down, retry=True)
        send = asyncio.ensure_future(self._send(http, live, live.base + call.path, call.body))
        live.sending.add(send)  # one task per attempt: the watchdog cancels it (no waiter per request)
        try:
            return await send
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # this request itself is cancelled, not the base down
                raise
            return Reply(reason=live.down or f"{host(live.base)} stopped answering", retry=True)
        finally:
            live.sending.discard(send)

    async def _send(self, http: Any, live: _Liveness, url: str, body: dict[str, Any]) -> Reply:
        import aiohttp

        try:
            async with http.post(url, json=body) as response:
                live.heard = asyncio.get_running_loop().time()  # any status: the server is alive
                status, text = response.status, await response.text()
                after = retry_after(response.headers.get("Retry-After"))
        except aiohttp.ConnectionTimeoutError:
            limit = self.settings.connect_timeout_s
            return Reply(reason=f"connection error (no connection within {limit:g} s)", retry=True)
        except TimeoutError:
            return Reply(reason=f"no response within {self.settings.max_request_s:g} s", retry=True)
        except aiohttp.ClientError as exc:
            return Reply(reason=f"connection error ({type(exc).__name__}: {exc})", retry=True)
        except UnicodeDecodeError:
            return Reply(reason="response body is not text", retry=True)
        live.heard = asyncio.get_running_loop().time()
        if status != 200:
            return Reply(reason=f"HTTP {status}: {' '.join(text.split())[:200]}",
                         retry=status in RETRY_STATUS, retry_after=after)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return Reply(reason=f"malformed JSON body ({len(text)} bytes)", retry=True)
        if not isinstance(data, dict):
            return Reply(reason="JSON body is not an object", retry=True)
        self.usage.add_reply(data.get("usage"))
        return Reply(data=data)

    async def _watch(self, http: Any, live: _Liveness) -> None:
        """While requests are in flight (or the base is down), probe it when it has been quiet."""
        loop, timeout = asyncio.get_running_loop(), self.settings.timeout_s
        interval = min(max(timeout / 4, 0.05), 10.0)
        while True:
            await asyncio.sleep(interval)
            if not live.sending and live.down is None:
                live.heard = loop.time()  # idle: nothing to be silent about
                continue
            if live.down is None and loop.time() - live.heard < interval:
                continue
            problem = await self._probe(http, live.base, min(timeout, 10.0))
            if problem is None:  # up (again)
                if live.down is not None:
                    log.info("%s answers again", host(live.base))
                live.heard, live.down = loop.time(), None
            elif live.down is None and loop.time() - live.heard >= timeout:  # down: its attempts cancelled
                live.down = (f"{host(live.base)} stopped answering: nothing for {timeout:g} s "
                             f"(liveness probe GET {PROBE_PATH}: {problem})")
                for send in live.sending:
                    send.cancel()
                log.warning("%s", live.down)

    async def _probe(self, http: Any, base: str, timeout_s: float) -> str | None:
        """None when the server answers ``GET /v1/models`` (any status), else why not."""
        import aiohttp

        try:
            limit = aiohttp.ClientTimeout(total=timeout_s)
            async with http.get(base + PROBE_PATH, timeout=limit) as response:
                await response.read()
                return None
        except TimeoutError:
            return f"no reply within {timeout_s:g} s"
        except aiohttp.ClientError as exc:
            return f"{type(exc).__name__}: {exc}"
