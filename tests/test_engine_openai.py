"""OpenAIEngine against the project's fake OpenAI-compatible server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading

import pytest

from socbench.config import make_config
from socbench.engines import create_engine
from socbench.engines.openai_api import OpenAIEngine, OpenAISettings, resolve_api_key
from socbench.errors import ConfigError, EngineError
from socbench.types import LoglikelihoodRequest, Message, PromptRequest, SamplingSettings
from support import FakeOpenAIServer
from support.fake_openai import fake_tokens, pick_code, token_logprob

CODES = ("1", "2", "3", "4")
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}


def prompt(i: int, codes: tuple[str, ...] = CODES, **kw) -> PromptRequest:
    text = f"Question {i}: how much do you agree?\n" + "\n".join(f"{c}. option {c}" for c in codes)
    return PromptRequest(item_id=f"p{i}",
                         messages=(Message("system", "You are a respondent."), Message("user", text)),
                         offered_codes=codes, answer_prefix='{"answer": "', **kw)


def raw_prompt(i: int, codes: tuple[str, ...]) -> PromptRequest:
    text = f"Question {i}:\n" + "\n".join(f"{c}. option {c}" for c in codes) + "\nAnswer: "
    return PromptRequest(item_id=f"r{i}", messages=(Message("user", text),), offered_codes=codes,
                         answer_prefix='{"answer": "', chat=False)


def expected_code(request: PromptRequest, mode: str = "generate") -> str:
    """What the fake model answers: its hash rule over the non-assistant messages (raw: the prompt sent)."""
    if not request.chat:
        text = request.messages[0].content + (request.answer_prefix if mode == "logprobs" else "")
        return pick_code(text, request.offered_codes)
    return pick_code("\n".join(m.content for m in request.messages), request.offered_codes)


def engine_for(*servers: FakeOpenAIServer, **settings) -> OpenAIEngine:
    return OpenAIEngine(OpenAISettings(api_base=[s.url for s in servers], model="fake-model",
                                       **(FAST | settings)))


def test_generate_same_order_each_reported_once():
    requests = [prompt(i) for i in range(30)]
    seen: list[int] = []
    with FakeOpenAIServer(latency_ms=5) as server:
        results = engine_for(server).generate(requests, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(30))
    assert [r.key for r in results] == [r.key for r in requests]
    assert [json.loads(r.text)["answer"] for r in results] == [expected_code(r) for r in requests]
    assert all(r.error is None and not r.cached for r in results)


def test_twenty_percent_failing_first_attempts_all_answered():
    faults = {"500": 0.04, "502": 0.02, "503": 0.02, "429": 0.04, "timeout": 0.03, "drop": 0.02,
              "garbage": 0.015, "truncated": 0.015}
    requests = [prompt(i) for i in range(150)]
    with FakeOpenAIServer(latency_ms=5, faults=faults, hang_s=3.0, retry_after_s=0.05, seed=3) as server:
        results = engine_for(server, timeout_s=1.0, concurrent_requests=16).generate(requests)
        stats = server.stats()
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    assert [json.loads(r.text)["answer"] for r in results] == [expected_code(r) for r in requests]
    n_faulted = sum(stats.faults.values())
    assert 15 <= n_faulted <= 45 and len(stats.faults) >= 6  # ~20 % of 150, mixed kinds
    # each faulted request needed exactly one retry, except the slow ("timeout") ones: the server
    # kept answering its liveness probes meanwhile, so they were waited for, not thrown away
    assert stats.faults["timeout"] > 0 and stats.requests == 150 + n_faulted - stats.faults["timeout"]
    assert stats.statuses["429"] == stats.faults["429"] and stats.statuses["drop"] == stats.faults["drop"]
    assert stats.max_in_flight <= 16


@pytest.mark.parametrize("kind", ["null", "empty"])
def test_null_or_empty_content_twice_is_an_empty_reply_not_an_engine_error(kind):
    """The model said nothing, twice: that is its answer (a parse failure later, as in-process),
    not a failed request that would leave the run incomplete for ever."""
    requests = [prompt(i) for i in range(40)]
    with FakeOpenAIServer(faults={kind: 0.25}, fail_attempts=100) as server:
        results = engine_for(server, max_retries=5).generate(requests)
        stats = server.stats()
    assert all(r.error is None for r in results)
    empty = [r for r in results if r.text == '{"answer": "']  # the started reply, and nothing after it
    assert 3 <= len(empty) == stats.faults[kind] // 2  # each such request was asked exactly twice
    assert all(json.loads(r.text)["answer"] == expected_code(q) for q, r in zip(requests, results)
               if r not in empty)
    assert max(stats.attempts.values()) == 2


def test_null_content_once_then_answered():
    requests = [prompt(i) for i in range(20)]
    with FakeOpenAIServer(faults={"null": 0.3, "empty": 0.2}, seed=1) as server:
        results = engine_for(server).generate(requests)
    assert all(r.error is None for r in results)


def test_retry_budget_exhausted_gives_error_with_reason():
    requests = [prompt(i) for i in range(6)]
    with FakeOpenAIServer(faults={"503": 1.0}, fail_attempts=1000) as server:
        results = engine_for(server, max_retries=2).generate(requests)
        stats = server.stats()
    assert stats.requests == 6 * 3
    assert all(r.error.startswith("gave up after 3 attempts: HTTP 503") for r in results)


def test_client_errors_are_not_retried():
    with FakeOpenAIServer(faults={"401": 1.0}, fail_attempts=1000) as server:
        results = engine_for(server, max_retries=4).generate([prompt(0)])
        assert server.stats().requests == 1
    assert results[0].error.startswith("HTTP 401")


def test_in_flight_never_exceeds_concurrent_requests():
    requests = [prompt(i) for i in range(70)]
    with FakeOpenAIServer(latency_ms=50) as server:
        engine_for(server, concurrent_requests=7).generate(requests)
        stats = server.stats()
    assert stats.max_in_flight == 7  # all submitted at once: the bound is reached, never passed


def test_round_robin_over_two_servers_and_a_down_one():
    requests = [prompt(i) for i in range(40)]
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        engine_for(a, b).generate(requests)
        assert a.stats().requests == b.stats().requests == 20
    with FakeOpenAIServer() as up, FakeOpenAIServer(down_for_s=30) as down:
        results = engine_for(up, down, max_retries=3).generate(requests)
        assert up.stats().requests == 40 and down.stats().requests == 0
    assert all(r.error is None for r in results)


def test_server_down_for_the_first_half_second():
    with FakeOpenAIServer(down_for_s=0.5) as server:
        results = engine_for(server, max_retries=20, backoff_base_s=0.05, backoff_max_s=0.2).generate(
            [prompt(i) for i in range(10)])
        assert server.stats().requests == 10
    assert all(r.error is None for r in results)


@pytest.mark.slow  # imports vLLM
def test_structured_sends_the_in_process_regex_and_json_schema_on_request():
    """Issue 12, seen 4: over the API ``--structured`` sent a JSON schema (any whitespace allowed)
    where in-process vLLM constrains with a regex; greedy answers differed."""
    from vllm.sampling_params import SamplingParams  # noqa: F401 - the in-process side builds vLLM params

    from socbench.engines._chat import answer_regex
    from socbench.engines.vllm import _generate_params

    request = PromptRequest(item_id="s", messages=(Message("user", "Pick seven or eight."),),
                            offered_codes=("7", "8", "10"), structured=True)
    in_process = _generate_params(request).structured_outputs.regex
    assert in_process == answer_regex(("7", "8", "10"))
    with FakeOpenAIServer() as server:  # no option lines in the prompt: the fake answers from the constraint
        [result] = engine_for(server).generate([request])  # the default mode
        assert server.stats().last_body["structured_outputs"] == {"regex": in_process}
        assert json.loads(result.text)["answer"] in ("7", "8", "10")
        [schema] = engine_for(server, structured_mode="json_schema").generate([request])
        sent = server.stats().last_body
        assert "structured_outputs" not in sent and sent["response_format"]["type"] == "json_schema"
        assert json.loads(schema.text)["answer"] in ("7", "8", "10")
        [plain] = engine_for(server, structured_mode="none").generate([request])
        [raw] = engine_for(server).generate([PromptRequest(item_id="r", messages=request.messages, chat=False,
                                                           offered_codes=("7", "8"), structured=True)])
        assert server.stats().by_path["/v1/completions"] == 1
    assert json.loads(plain.text)["answer"] == "1"  # no constraint sent, no options listed
    assert json.loads(raw.text)["answer"] in ("7", "8")


def test_structured_on_by_default_for_every_backend_that_has_it():
    assert make_config(api_type="config", api_base="http://127.0.0.1:1", model="m").use_structured
    assert make_config(api_type="vllm").use_structured and not make_config(api_type="hf").use_structured
    assert not make_config(api_type="config", api_base="http://127.0.0.1:1", model="m",
                           structured=False).use_structured


@pytest.mark.parametrize("tokenize", [True, False])
def test_option_logprobs(tokenize):
    requests = [prompt(i) for i in range(10)] + [raw_prompt(i, ("1", "2", "10")) for i in range(4)]
    with FakeOpenAIServer(tokenize=tokenize) as server:
        engine = engine_for(server)
        results = engine.option_logprobs(requests)
        assert engine.option_logprobs(requests) == results
        # the prefix, and prefix+code with and without the closing quote, each tokenized once
        # (404: never again)
        assert server.stats().by_path["/tokenize"] == 11
    for request, result in zip(requests, results):
        lps, chosen = result.option_logprobs, expected_code(request, "logprobs")
        assert set(lps) == set(request.offered_codes) and max(lps, key=lps.get) == chosen
        # one request per code, prompt log-probs of code + quote
        if tokenize and "10" in request.offered_codes:
            assert lps == pytest.approx({c: (-0.05 if c == chosen else -3.0) * len(c) - 0.01 for c in lps})
        else:  # one request: next-token log-probs (exact token ids, or the top 20 by text)
            assert lps[chosen] == pytest.approx(-0.05)


def test_option_logprobs_missing_codes_get_minus_inf():
    request = prompt(1, codes=("1", "2", "3", "4", "5", "6", "7", "8"))
    with FakeOpenAIServer(tokenize=False) as server:
        [result] = engine_for(server, top_logprobs=3).option_logprobs([request])
    finite = {c: v for c, v in result.option_logprobs.items() if not math.isinf(v)}
    # only the top 3 are known
    assert finite[expected_code(request)] == pytest.approx(-0.05) and len(finite) <= 3
    assert all(v == -math.inf for c, v in result.option_logprobs.items() if c not in finite)


def _expected_loglikelihood(context: str, continuation: str) -> tuple[float, int, bool]:
    tokens = fake_tokens(context + continuation)
    n_context = len(fake_tokens(context))  # the examples below split cleanly at the boundary
    picked = range(n_context, len(tokens))
    scores = [token_logprob(i, tokens[i]) for i in picked]
    greedy = all(token_logprob(i, tokens[i]) >= token_logprob(i, "<alt>") for i in picked)
    return sum(scores), len(picked), greedy


def test_loglikelihood_matches_independent_sum():
    pairs = [("The sky is", " blue"), ("Answer: 12", "34 apples."), ("Q: 2+2?\nA:", " 4")]
    with FakeOpenAIServer() as server:
        results = engine_for(server).loglikelihood([LoglikelihoodRequest(c, x) for c, x in pairs])
    for (context, continuation), result in zip(pairs, results):
        logprob, n_tokens, greedy = _expected_loglikelihood(context, continuation)
        assert result.logprob == pytest.approx(logprob)
        assert (result.n_tokens, result.is_greedy) == (n_tokens, greedy)


def test_loglikelihood_failures_raise_after_reporting_the_rest():
    requests = [LoglikelihoodRequest(f"Context {i} is", " fine") for i in range(12)]
    reported: list[int] = []
    with FakeOpenAIServer(faults={"500": 0.4}, fail_attempts=1000, seed=2) as server:
        with pytest.raises(EngineError, match="loglikelihood requests to 127.0.0.1"):
            engine_for(server, max_retries=1).loglikelihood(requests,
                                                            on_result=lambda i, r: reported.append(i))
        failed = server.stats().faults["500"] // 2
    assert 0 < failed < 12 and len(reported) == 12 - failed


def test_called_inside_a_running_loop_and_from_a_thread():
    with FakeOpenAIServer() as server:
        engine = engine_for(server)

        async def in_loop():
            return engine.generate([prompt(1)])

        assert asyncio.run(in_loop())[0].error is None
        out: list = []
        worker = threading.Thread(target=lambda: out.extend(engine.generate([prompt(2)])))
        worker.start()
        worker.join()
        assert out[0].error is None


def test_api_key_never_leaks(tmp_path, monkeypatch, caplog):
    key = "sk-PLANTED-secret-4f1c9a7e"
    monkeypatch.setenv("SOCBENCH_TEST_KEY", key)
    caplog.set_level(logging.DEBUG)
    requests = [prompt(i, sampling=SamplingSettings(seed=i)) for i in range(30)]
    with FakeOpenAIServer(faults={"401": 0.3, "503": 0.2}, fail_attempts=1000) as server:
        engine = create_engine("openai", "fake-model", settings={"api_base": server.url, "max_retries": 1,
                                                                  "api_key_env": "SOCBENCH_TEST_KEY", **FAST},
                               cache_dir=tmp_path)
        results = engine.generate(requests)
        with pytest.raises(EngineError) as raised:
            engine.loglikelihood([LoglikelihoodRequest(f"c{i}", " x") for i in range(20)])
        engine.close()
        assert server.stats().with_auth == server.stats().requests > 0  # the key was sent
    errors = [r.error for r in results if r.error]
    assert any("bad key Bearer ***" in e for e in errors)  # the server echoed it; we redacted it
    texts = [*errors, str(raised.value), caplog.text, json.dumps(engine.identity),
             repr(engine.backend.settings)]
    assert all(key not in text for text in texts)
    assert all(key.encode() not in path.read_bytes() for path in tmp_path.iterdir())


def test_resolve_api_key(monkeypatch):
    monkeypatch.delenv("SOCBENCH_NO_SUCH_KEY", raising=False)
    assert resolve_api_key("SOCBENCH_NO_SUCH_KEY") is None
    monkeypatch.setenv("SOCBENCH_SOME_KEY", "abc")
    assert resolve_api_key("SOCBENCH_SOME_KEY").get_secret_value() == "abc"
    with pytest.raises(ConfigError, match="--api_key_env must name an environment variable"):
        resolve_api_key("sk-abc123")


@pytest.mark.parametrize("base", ["ftp://host:1", "localhost:8000", "", "http://", "http://h:99999"])
def test_invalid_api_base_is_a_config_error(base):
    with pytest.raises(ConfigError, match="--api_base"):
        OpenAISettings(api_base=base, model="m")
    with pytest.raises(ConfigError, match="--api_base"):
        create_engine("config", "m", settings={"api_base": f"http://ok:1,{base or 'x'}"})
    with pytest.raises(ConfigError, match="^--api_base"):  # the flag reads it as the engine does
        make_config(api_type="openai", api_base=f"http://ok:1,{base or 'x'}")


def test_a_whole_surveys_calls_keep_a_bounded_window_of_tasks(monkeypatch):
    """Issue 43: a task per call was made up front (2.8 million coroutines for a whole module); now at most
    the window's are started and unfinished at once, the answers still in order, and a failing sink still
    stops the rest."""
    from socbench.engines import _http
    from socbench.engines._http import WINDOW

    seen: list[int] = []

    async def ask(self, batch, call):
        if call.body["i"] % 500 == 0:
            seen.append(len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return call.body["i"], None

    monkeypatch.setattr(_http.Transport, "_ask", ask)
    settings = OpenAISettings(api_base="http://127.0.0.1:9", model="m", concurrent_requests=8)
    transport = _http.Transport(settings)
    calls = [_http.Call("/v1/chat/completions", {"i": i}, dict) for i in range(20_000)]
    assert transport.run_all(calls, lambda i, value, error: value) == list(range(20_000))
    assert max(seen) <= WINDOW + 8, max(seen)

    def sink(index: int, value: object, error: str | None) -> object:
        if index == 5_000:
            raise RuntimeError("the sink failed")
        return value

    seen.clear()
    with pytest.raises(RuntimeError, match="the sink failed"):
        transport.run_all(calls, sink)
    assert len(seen) < (5_000 + 2 * WINDOW) / 500


def test_registry_errors_and_identity():
    with pytest.raises(ConfigError, match="choose one of config, hf, openai, vllm"):
        create_engine("llamacpp", "m")
    with pytest.raises(ConfigError, match="--concurrent_requests"):
        create_engine("openai", "m", settings={"api_base": "http://h:1", "concurrent_requests": 0})
    with pytest.raises(ConfigError, match="--api_base"):
        create_engine("openai", "m")
    engine = create_engine("config", "m", settings={"api_base": "http://u:pw@b:2/v1, https://a.example"})
    assert engine.identity["api_base"] == "a.example,b:2" and "pw" not in json.dumps(engine.identity)
    assert engine.settings.api_base == ("http://u:pw@b:2", "https://a.example")


def test_the_heap_is_frozen_only_while_requests_are_in_flight():
    """run_all keeps what lived before out of the collector's walks while it sends, and gives the heap
    back after, when a sink fails too (``gc.freeze`` is process-wide)."""
    import gc

    frozen: list[int] = []

    def sink(i: int, result: object) -> None:
        frozen.append(gc.get_freeze_count())
        raise RuntimeError("the sink fails")

    with FakeOpenAIServer() as server:
        with pytest.raises(RuntimeError, match="the sink fails"):
            engine_for(server).generate([prompt(0)], on_result=sink)
    assert frozen and frozen[0] > 0 and gc.get_freeze_count() == 0
