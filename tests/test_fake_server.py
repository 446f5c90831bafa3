"""The fake OpenAI server itself: seeded fault decisions, refusal while down, script mode."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from support import FakeConfig, FakeOpenAIServer
from support.waiting import wait_for

TESTS = Path(__file__).resolve().parent  # ``python -m support.fake_openai`` runs from here


def post(url: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _models(url: str) -> list[str] | None:
    """The served model ids, or None while the server refuses connections."""
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as response:
            return [m["id"] for m in json.load(response)["data"]]
    except urllib.error.URLError:
        return None


def test_fault_decisions_are_seeded_per_request_and_attempt():
    config = FakeConfig(faults={"500": 0.1, "429": 0.05, "null": 0.05}, fail_attempts=2, seed=7)
    ids = [f"request-{i}" for i in range(4000)]
    first = [config.fault_for(i, 0) for i in ids]
    shares = Counter(first)
    assert abs(shares["500"] / 4000 - 0.10) < 0.02 and abs(shares["429"] / 4000 - 0.05) < 0.015
    assert abs(shares[None] / 4000 - 0.80) < 0.025
    assert [config.fault_for(i, 1) for i in ids] == first  # attempts below fail_attempts fail alike
    assert all(config.fault_for(i, 2) is None for i in ids)
    reseeded = FakeConfig(faults=config.faults, seed=8)
    assert [reseeded.fault_for(i, 0) for i in ids] != first


def test_connection_refused_while_down_then_serving():
    with FakeOpenAIServer(down_for_s=math.inf) as server:  # down until listen(): no race with the clock
        with pytest.raises(urllib.error.URLError, match="refused"):
            urllib.request.urlopen(f"{server.url}/v1/models", timeout=5)
        server.listen()
        assert wait_for(lambda: _models(server.url), timeout_s=30) == ["fake-model"]


def test_a_request_past_max_model_len_is_refused_as_vllm_refuses_it():
    """A misconfigured server (test_vllm_server.py): the short probe is answered, a long prompt is not."""
    with FakeOpenAIServer(max_model_len=40) as server:
        short = {"messages": [{"role": "user", "content": "1. Yes\n2. No"}], "max_tokens": 16}
        assert post(f"{server.url}/v1/chat/completions", short)[0] == 200
        status, text = post(f"{server.url}/v1/chat/completions", dict(short, max_tokens=40))
        assert status == 400 and "maximum context length is 40 tokens" in json.loads(text)["error"]["message"]


@pytest.mark.slow  # runs the fake server as a script
def test_script_mode_binds_localhost_and_fails_first_attempts():
    proc = subprocess.Popen([sys.executable, "-m", "support.fake_openai", "--port", "0",
                             "--fault", "503=1", "--model", "m1"], stdout=subprocess.PIPE, text=True,
                            cwd=TESTS)
    try:
        line = proc.stdout.readline()
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:")
        body = {"model": "m1", "messages": [{"role": "user", "content": "Pick:\n3. a\n5. b"}]}
        assert post(f"{url}/v1/chat/completions", body)[0] == 503  # attempt 0 of every request fails
        status, text = post(f"{url}/v1/chat/completions", body)
        assert status == 200
        assert json.loads(json.loads(text)["choices"][0]["message"]["content"])["answer"] in ("3", "5")
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow  # runs the fake server as a script
def test_script_rejects_unknown_fault():
    done = subprocess.run([sys.executable, "-m", "support.fake_openai", "--fault", "teapot=1"],
                          capture_output=True, text=True, timeout=30, cwd=TESTS)
    assert done.returncode == 2 and "unknown fault kind" in done.stderr
