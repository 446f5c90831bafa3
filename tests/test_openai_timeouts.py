"""Timeouts that do not discard work, and a server that stops answering is still detected.

Issue 12, seen 5: the request timeout counted the time a request waited in a busy server's
queue; with 64 in flight on a slow server, requests timed out, were retried and the server's
work was thrown away. Now a request is cut only when its server has been silent (no answer
to anything, nor to a ``/v1/models`` probe) for ``timeout_s``.
"""

from __future__ import annotations

import threading
import time

from socbench.engines.openai_api import OpenAIEngine, OpenAISettings
from support.fake_openai import FakeOpenAIServer
from tests.test_engine_openai import prompt

FAST = {"backoff_base_s": 0.05, "backoff_max_s": 0.2}


def engine(*servers: FakeOpenAIServer, **settings) -> OpenAIEngine:
    return OpenAIEngine(OpenAISettings(api_base=[s.url for s in servers], model="fake-model",
                                       **(FAST | settings)))


def test_64_in_flight_on_a_busy_server_are_waited_for_not_thrown_away():
    requests = [prompt(i) for i in range(64)]
    with FakeOpenAIServer(capacity=4, latency_ms=100) as server:  # a queue: the last waits ~1.6 s
        began = time.monotonic()
        results = engine(server, timeout_s=1.0, concurrent_requests=64).generate(requests)
        took = time.monotonic() - began
        stats = server.stats()
    assert took > 1.0  # some requests really waited longer than the timeout
    assert all(r.error is None for r in results), {r.error for r in results}
    assert stats.requests == 64 and set(stats.attempts.values()) == {1}  # each sent once, none discarded


def test_a_server_that_stops_answering_fails_its_requests_with_the_reason():
    requests = [prompt(i) for i in range(40)]
    done: list[int] = []
    with FakeOpenAIServer(capacity=2, latency_ms=50) as server:
        slow = engine(server, timeout_s=1.0, max_retries=2, concurrent_requests=8)
        hang = threading.Timer(0.4, server.hang)  # after a few answers, nothing answers any more
        hang.start()
        began = time.monotonic()
        try:
            results = slow.generate(requests, on_result=lambda i, r: done.append(i))
        finally:
            hang.cancel()
            server.wake()
        took = time.monotonic() - began
    answered = [r for r in results if r.error is None]
    failed = [r.error for r in results if r.error is not None]
    assert 0 < len(answered) < 40 and len(done) == 40  # every request reported, none lost
    assert all("stopped answering: nothing for 1 s" in e for e in failed), failed[:3]
    assert all("(liveness probe GET /v1/models: " in e for e in failed)
    assert took < 10  # detected after ~1 s of silence; retries against a down server fail at once


def test_a_silent_server_among_two_costs_nothing_but_its_share_of_retries():
    requests = [prompt(i) for i in range(20)]
    with FakeOpenAIServer() as good, FakeOpenAIServer() as hung:
        hung.hang()
        try:
            results = engine(good, hung, timeout_s=0.5, max_retries=3).generate(requests)
        finally:
            hung.wake()
    assert all(r.error is None for r in results), {r.error for r in results}


def test_a_request_longer_than_the_ceiling_is_cut_even_from_a_live_server():
    with FakeOpenAIServer(latency_ms=1500) as server:
        [result] = engine(server, timeout_s=5.0, max_request_s=0.3, max_retries=1).generate([prompt(1)])
    assert result.error == "gave up after 2 attempts: no response within 0.3 s"
