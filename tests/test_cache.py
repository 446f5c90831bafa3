"""EngineCache and CachedEngine: hits never reach the backend, finished work survives a crash or a kill."""

from __future__ import annotations

import json
import logging
import math
import os
import runpy
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from socbench.engines import CachedEngine, EngineCache, create_engine
from socbench.engines.cache import CACHE_FILE, MAGIC
from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, Message, PromptRequest
from support import FakeOpenAIServer


class CountingEngine:
    """A trivial real backend: the answer is a function of the request; it records what it is asked."""

    def __init__(self, model: str = "echo", die_after: int | None = None,
                 errors_for: frozenset[str] = frozenset()):
        self.model, self.die_after, self.errors_for = model, die_after, errors_for
        self.calls: list[tuple[str, list[str]]] = []
        self.started = self.closed = False

    @property
    def identity(self) -> dict[str, str]:
        return {"backend": "counting", "model": self.model}

    def _serve(self, method, requests, answer, on_result):
        self.started = True  # a real backend would load its model here, on the first miss
        self.calls.append((method, [getattr(r, "item_id", getattr(r, "context", "")) for r in requests]))
        out = []
        for index, request in enumerate(requests):
            if index == self.die_after:
                raise RuntimeError("backend died")
            out.append(answer(request))
            if on_result:
                on_result(index, out[-1])
        return out

    def generate(self, requests, on_result=None):
        def answer(r):
            if r.item_id in self.errors_for:
                return EngineResult(r.key, error="server said no")
            return EngineResult(r.key, text=f"{self.model} answers {r.item_id}")
        return self._serve("generate", requests, answer, on_result)

    def option_logprobs(self, requests, on_result=None):
        return self._serve("option_logprobs", requests,
                           lambda r: EngineResult(r.key, option_logprobs={"1": -0.5, "2": -math.inf}),
                           on_result)

    def loglikelihood(self, requests, on_result=None):
        return self._serve("loglikelihood", requests,
                           lambda r: LoglikelihoodResult(r.key, -1.25 * len(r.continuation), 2, True),
                           on_result)

    def close(self):
        self.closed = True


def req(i: int) -> PromptRequest:
    return PromptRequest(item_id=f"p{i}", messages=(Message("user", f"Question {i}\n1. yes\n2. no"),),
                         offered_codes=("1", "2"))


def cached(tmp_path: Path, backend: CountingEngine) -> CachedEngine:
    return CachedEngine(backend, EngineCache(tmp_path / CACHE_FILE))


def test_second_identical_run_makes_zero_backend_calls(tmp_path):
    requests = [req(i) for i in range(10)]
    first = cached(tmp_path, CountingEngine())
    out1 = first.generate(requests)
    first.close()
    assert first.backend.calls == [("generate", [f"p{i}" for i in range(10)])] and first.backend.closed
    assert (first.stats.misses, first.stats.hits) == (10, 0)

    backend = CountingEngine()
    second = cached(tmp_path, backend)  # a new process would open the file the same way
    seen: list[int] = []
    out2 = second.generate(requests, on_result=lambda i, r: seen.append(i))
    assert backend.calls == [] and not backend.started  # a fully cached rerun never starts the model
    assert sorted(seen) == list(range(10)) and second.stats.hits == 10
    assert [r.text for r in out2] == [r.text for r in out1] and all(r.cached for r in out2)
    assert [r.key for r in out2] == [r.key for r in requests]


def test_only_misses_go_to_the_backend_in_input_order(tmp_path):
    engine = cached(tmp_path, CountingEngine())
    engine.generate([req(i) for i in range(10)])
    engine.backend.calls.clear()
    order = [15, 3, 12, 7, 11]
    results = engine.generate([req(i) for i in order])
    assert engine.backend.calls == [("generate", ["p15", "p12", "p11"])]
    assert [r.text for r in results] == [f"echo answers p{i}" for i in order]
    assert [r.cached for r in results] == [False, True, False, True, False]


def test_error_results_are_not_stored(tmp_path):
    engine = cached(tmp_path, CountingEngine(errors_for=frozenset({"p2", "p5"})))
    results = engine.generate([req(i) for i in range(8)])
    assert [i for i, r in enumerate(results) if r.error] == [2, 5]
    assert len(engine.cache) == 6
    engine.backend = healthy = CountingEngine()
    assert all(r.error is None for r in engine.generate([req(i) for i in range(8)]))
    assert healthy.calls == [("generate", ["p2", "p5"])]


def test_interrupted_run_resumes_with_only_the_unfinished(tmp_path):
    requests = [req(i) for i in range(20)]
    dying = cached(tmp_path, CountingEngine(die_after=7))
    with pytest.raises(RuntimeError, match="backend died"):
        dying.generate(requests)
    dying.close()
    rerun = cached(tmp_path, CountingEngine())
    results = rerun.generate(requests)
    assert rerun.backend.calls == [("generate", [f"p{i}" for i in range(7, 20)])]
    assert [r.cached for r in results] == [True] * 7 + [False] * 13


def test_methods_and_identity_key_apart_and_values_round_trip(tmp_path):
    engine = cached(tmp_path, CountingEngine())
    pairs = [LoglikelihoodRequest("The sky is", " blue"), LoglikelihoodRequest("Grass is", " green")]
    first = (engine.generate([req(1)]), engine.option_logprobs([req(1)]), engine.loglikelihood(pairs))
    again = (engine.generate([req(1)]), engine.option_logprobs([req(1)]), engine.loglikelihood(pairs))
    assert len(engine.cache) == 4 and engine.stats.hits == 4
    for fresh, hit in zip(first, again):
        assert [type(r) for r in fresh] == [type(r) for r in hit]
        assert [replace(r, cached=True) for r in fresh] == list(hit)
    assert again[1][0].option_logprobs["2"] == -math.inf
    assert again[2][0].logprob == -1.25 * 5
    other = CachedEngine(CountingEngine(model="other"), engine.cache)
    other.generate([req(1)])
    assert other.stats.misses == 1 and other.backend.calls


def test_threads_share_one_cache(tmp_path):
    engine = cached(tmp_path, CountingEngine())
    errors: list[BaseException] = []

    def work(start: int) -> None:
        try:
            for _ in range(3):
                engine.generate([req(i) for i in range(start, start + 40)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k * 20,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(engine.cache) == 100
    assert engine.stats.hits + engine.stats.misses == 4 * 3 * 40


def _only_warning(caplog) -> str:
    records = [r for r in caplog.records if r.name == "socbench" and r.levelno == logging.WARNING]
    assert len(records) == 1 and "\n" not in records[0].getMessage()
    return records[0].getMessage()


def _reusable(path: Path) -> None:
    cache = EngineCache(path)
    cache.put("k", "generate", json.dumps({"text": "t"}))
    cache.flush()
    assert cache.get_many(["k", "x"]) == {"k": json.dumps({"text": "t"})}
    cache.close()


def test_corrupt_file_is_set_aside_and_rebuilt(tmp_path, caplog):
    path = tmp_path / CACHE_FILE
    junk = os.urandom(8192)
    path.write_bytes(junk)
    _reusable(path)
    [aside] = tmp_path.glob(f"{CACHE_FILE}.corrupt-*")
    assert aside.read_bytes() == junk
    assert "moved it to" in _only_warning(caplog) and aside.name in caplog.text


@pytest.mark.parametrize("schema", ["foreign", "other-magic", "old-version"])
def test_foreign_or_incompatible_sqlite_is_set_aside(tmp_path, caplog, schema):
    path = tmp_path / CACHE_FILE
    with sqlite3.connect(path) as conn:
        if schema == "foreign":
            conn.execute("CREATE TABLE answers (x TEXT)")
        else:
            conn.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
            conn.execute("CREATE TABLE results (key TEXT PRIMARY KEY, method TEXT, value TEXT, created REAL)")
            magic, version = (MAGIC, "0") if schema == "old-version" else ("someone-else", "1")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [("magic", magic), ("schema", version)])
    conn.close()
    _reusable(path)
    assert len(list(tmp_path.glob(f"{CACHE_FILE}.incompatible-*"))) == 1
    assert "unusable" in _only_warning(caplog)


def test_second_run_against_fake_server_sends_nothing(tmp_path):
    requests = [req(i) for i in range(25)]
    with FakeOpenAIServer(latency_ms=5) as server:
        for run in range(2):
            engine = create_engine("openai", "fake-model", settings={"api_base": server.url},
                                   cache_dir=tmp_path)
            results = engine.generate(requests)
            engine.close()
            assert server.stats().requests == 25  # the second run added none
            assert all(r.cached == (run == 1) and r.error is None for r in results)


RUNNER = '''
import sys
from socbench.engines import create_engine
from socbench.types import Message, PromptRequest

def requests(n):
    return [PromptRequest(item_id=f"k{i}", messages=(Message("user", f"Question {i}\\n1. yes\\n2. no"),),
                          offered_codes=("1", "2")) for i in range(n)]

if __name__ == "__main__":
    url, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    engine = create_engine("openai", "fake-model", settings={"api_base": url, "concurrent_requests": 4},
                           cache_dir=cache_dir)
    engine.generate(requests(n))
'''


def _rows(path: Path) -> int:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:  # see test_reliability
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow  # runs writer processes
def test_sigkilled_run_loses_only_unfinished_requests(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(RUNNER)
    n, cache_dir = 60, tmp_path / "cache"
    with FakeOpenAIServer(latency_ms=100) as server:
        proc = subprocess.Popen([sys.executable, str(script), server.url, str(cache_dir), str(n)])
        deadline = time.monotonic() + 60
        while _rows(cache_dir / CACHE_FILE) < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stats = server.wait_idle()  # the server finishes the requests it was serving
        answered, received = stats.statuses["200"], stats.requests
        engine = create_engine("openai", "fake-model", settings={"api_base": server.url}, cache_dir=cache_dir)
        kept = len(engine.cache)
        assert 12 <= kept < n and answered - kept <= 8  # at most the last moment's answers are lost
        results = engine.generate(runpy.run_path(str(script))["requests"](n))
        engine.close()
        assert server.stats().requests - received == n - kept  # only what had not finished is sent again
    assert sum(r.cached for r in results) == kept and all(r.error is None for r in results)


@pytest.mark.slow  # builds the tiny model in transformers
def test_fully_cached_rerun_never_starts_the_vllm_backend(tmp_path, tiny_model):
    from socbench.engines.cache import cache_key

    engine = create_engine("vllm", str(tiny_model), cache_dir=tmp_path)
    requests = [req(i) for i in range(5)]
    for r in requests:  # what an earlier run of this model stored
        engine.cache.put(cache_key(engine.identity, "generate", r.key), "generate",
                         json.dumps({"text": r.item_id}))
    engine.cache.flush()
    results = engine.generate(requests)
    assert [r.text for r in results] == [r.item_id for r in requests] and all(r.cached for r in results)
    assert engine.backend.startup_s is None  # the model was never loaded
    engine.close()


def test_cache_keys_are_cache_key_each_with_the_shared_part_encoded_once():
    """Issue 43: a run computes every request's cache key three times; ``cache_keys`` encodes the identity
    and method once and gives the very keys ``cache_key`` gives (an existing cache stays readable)."""
    from socbench.engines.cache import cache_key, cache_keys

    requests = [PromptRequest(f"{i}:V5", (Message("user", f"Frage {i} \u00e9\"\\\n"),)) for i in range(50)]
    requests += [LoglikelihoodRequest("ctx", " ans")]
    for identity in ({"backend": "openai", "model": "m", "api_base": "http://h:1/v1"},
                     {"z": "\u00fc", "a": "1", "b": "[\"x\", 2]"}, {}):
        for method in ("generate", "option_logprobs", "loglikelihood"):
            assert cache_keys(identity, method, requests) == [cache_key(identity, method, r.key)
                                                              for r in requests]


def test_the_writer_does_not_sync_at_every_commit(tmp_path: Path) -> None:
    """Both connections run ``synchronous=NORMAL`` (in WAL mode a commit survives a process kill); the
    writer's default, FULL, synced the WAL at each small commit. A flush still makes answers durable."""
    cache = EngineCache(tmp_path / CACHE_FILE)
    try:
        assert cache._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        cache.put("k" * 64, "generate", json.dumps({"text": "x"}))
        cache.flush()
        assert cache.get_many(["k" * 64]) == {"k" * 64: json.dumps({"text": "x"})}
    finally:
        cache.close()


def test_a_requests_key_is_the_hash_of_its_sorted_json_whatever_it_holds():
    """``PromptRequest.key`` encodes each message and each question's settings once, and still hashes the
    JSON every earlier version hashed: an existing cache stays readable."""
    import hashlib
    from dataclasses import astuple

    from socbench.types import SamplingSettings

    def reference(r: PromptRequest) -> str:
        payload = {"messages": [[m.role, m.content] for m in r.messages], "mode": r.mode,
                   "codes": list(r.offered_codes), "prefix": r.answer_prefix, "structured": r.structured,
                   "chat": r.chat, "sampling": list(astuple(r.sampling))}
        payload |= {"choose_all": True} if r.choose_all else {}
        payload |= {"numeric": list(r.numeric)} if r.numeric is not None else {}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    persona = Message("system", 'Personal information:\n{"Land": "Österreich", "q": "\\"messages\\": 0"}')
    for n, codes in enumerate([(), ("1", "2"), ('"messages": 0', "ü")]):
        base = PromptRequest(f"{n}:q", (persona, Message("user", f"Frage {n}?\n1. Ja")), offered_codes=codes)
        for request in (base, replace(base, messages=()), replace(base, mode="logprobs", answer_prefix="{"),
                         replace(base, choose_all=True), replace(base, numeric=(0.0, 120.0), chat=False),
                         replace(base, structured=True, sampling=SamplingSettings(0.7, 0.9, 32, 5))):
            assert request.key == reference(request)
    ints = replace(base, numeric=(0, 120), sampling=SamplingSettings(0, 1, 32, 5))  # equal to floats, not
    floats = replace(base, numeric=(0.0, 120.0), sampling=SamplingSettings(0.0, 1.0, 32, 5))  # written so
    assert [ints.key, floats.key] == [reference(ints), reference(floats)] and ints.key != floats.key
