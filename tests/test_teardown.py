"""Engine teardown runs however a domain flow ends: success, a failing task, a timeout, SIGTERM.

What is observed is the engine's own ``close()``: a real cached OpenAI engine (its SQLite
cache refuses writes once closed) or a small backend of this file that counts its closes.
Flows run in-process against a temporary Prefect API (``prefect_test_harness``); the SIGTERM
case runs the flow in a child process pointed at the same API.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from socbench.config import make_config
from socbench.engines import session
from socbench.types import EngineResult
from support import FakeOpenAIServer

TESTS = Path(__file__).resolve().parent
DOMAIN = 3  # Family


class RecordingEngine:
    """A tiny backend: answers each item with its first offered code after ``block_s``;
    raises if ``fail``; counts ``close()`` calls (and writes them to ``marker`` if given)."""

    def __init__(self, name: str, block_s: float = 0.0, marker: Path | None = None) -> None:
        self.name, self.block_s, self.marker = name, block_s, marker
        self.calls = self.closes = 0
        self.stopped = self.closed = 0.0  # monotonic times: generate's end (returned or interrupted), close

    @property
    def identity(self) -> dict[str, str]:
        return {"backend": "recording", "model": self.name}

    def _note(self, event: str) -> None:
        if self.marker is not None:
            with self.marker.open("a") as handle:
                handle.write(event + "\n")

    def generate(self, requests, on_result=None):
        self.calls += 1
        self._note("started")
        deadline = time.monotonic() + self.block_s
        try:
            while time.monotonic() < deadline:  # short sleeps: interruptible by a timeout or a signal
                time.sleep(0.05)
        finally:
            self.stopped = time.monotonic()
        results = [EngineResult(r.key, text=json.dumps({"answer": r.offered_codes[0]})) for r in requests]
        for index, result in enumerate(results):
            if on_result is not None:
                on_result(index, result)
        return results

    option_logprobs = generate

    def loglikelihood(self, requests, on_result=None):
        raise NotImplementedError

    def close(self) -> None:
        self.closes += 1
        self.closed = time.monotonic()
        self._note("closed")


def config_for(name: str, tmp_path: Path, demo_data: Path, **extra):
    return make_config(domain_id=DOMAIN, interview_count=2, api_type="hf", model=name,
                       data_dir=str(demo_data), output_dir=str(tmp_path / "out"), **extra)


@pytest.fixture(autouse=True)
def no_engines_left():
    session.close_engines()
    yield
    assert session.close_engines() == 0  # every flow closed what it used


# the second teardown below runs outside a flow, where Prefect warns that its logs have no flow run
@pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send logs")
@pytest.mark.slow  # runs flows on a Prefect API
def test_success_closes_the_real_engine_and_a_second_teardown_is_harmless(api_url, tmp_path, demo_data):
    from socbench.flows.issp import issp_domain
    from socbench.tasks.teardown import teardown_safely

    with FakeOpenAIServer() as server:
        config = make_config(domain_id=DOMAIN, interview_count=2, api_type="config", api_base=server.url,
                             model="fake-model", data_dir=str(demo_data), output_dir=str(tmp_path / "out"))
        engine = session.get_engine(config.engine)  # the instance the flow will use (same configuration)
        state = issp_domain(DOMAIN, config, return_state=True)
        assert state.is_completed(), state.message
        assert server.stats().requests > 0
    with pytest.raises(RuntimeError, match="closed"):
        engine.cache.put("k", "generate", "{}")
    engine.close()  # idempotent
    teardown_safely()  # nothing left to close: harmless
    assert session.close_engines() == 0


@pytest.mark.slow  # runs flows on a Prefect API
def test_failing_task_still_closes(api_url, tmp_path, demo_data):
    from socbench.flows.issp import issp_domain

    (tmp_path / "out").write_text("a file where the output folder should be")  # the report task fails
    config = config_for("teardown-failure", tmp_path, demo_data, cache_dir=str(tmp_path / "cache"))
    engine = RecordingEngine("teardown-failure")
    session.register_engine(config.engine, engine)
    state = issp_domain(DOMAIN, config, return_state=True)
    assert state.is_failed(), state.name
    assert "out" in state.message, state.message  # the reason names the output path
    assert engine.calls == 1 and engine.closes == 1


@pytest.mark.slow  # runs flows on a Prefect API
def test_timeout_closes(api_url, tmp_path, demo_data):
    from socbench.flows.issp import issp_domain

    config = config_for("teardown-timeout", tmp_path, demo_data)
    engine = RecordingEngine("teardown-timeout", block_s=60)
    session.register_engine(config.engine, engine)
    started = time.monotonic()
    state = issp_domain.with_options(timeout_seconds=3)(DOMAIN, config, return_state=True)
    assert state.is_failed() and state.name == "TimedOut", (state.name, state.message)
    assert engine.calls == 1 and engine.closes == 1
    # the timeout interrupted the blocked request and the engine was closed then, not at its 60 s end (what
    # Prefect's own bookkeeping takes after that, on a loaded shared test server, is not this test's business)
    assert engine.stopped - started < 30 and engine.closed - started < 30, (engine.stopped - started,
                                                                           engine.closed - started)


SIGTERM_RUNNER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_teardown import RecordingEngine, config_for
from socbench.engines.session import register_engine
from socbench.flows.issp import issp_domain

tmp, marker = Path(sys.argv[1]), Path(sys.argv[2])
config = config_for("teardown-sigterm", tmp, Path({demo!r}))
register_engine(config.engine, RecordingEngine("teardown-sigterm", block_s=120, marker=marker))
issp_domain({domain}, config)
"""


@pytest.mark.slow  # runs flows on a Prefect API
def test_sigterm_closes(api_url, tmp_path, demo_data):
    script, marker = tmp_path / "run.py", tmp_path / "events.txt"
    script.write_text(SIGTERM_RUNNER.format(tests=str(TESTS), demo=str(demo_data), domain=DOMAIN))
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, PREFECT_API_URL=api_url, TMPDIR=str(tmp_path / "tmp"))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(marker)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and "started" in marker.read_text()):
            why = proc.stdout.read() if proc.poll() is not None else "timeout"
            assert proc.poll() is None and time.monotonic() < deadline, why
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert marker.read_text().split() == ["started", "closed"], output[-3000:]
    assert proc.returncode != 0  # the run was cut short, not reported as a success


class _Breaks(RecordingEngine):
    def close(self) -> None:
        super().close()
        raise OSError("device busy")


def test_one_engine_failing_to_close_does_not_keep_the_others_open(tmp_path, demo_data):
    first, second = _Breaks("a"), RecordingEngine("b")
    session.register_engine(config_for("a", tmp_path, demo_data).engine, first)
    session.register_engine(config_for("b", tmp_path, demo_data).engine, second)
    with pytest.raises(OSError, match="device busy"):
        session.close_engines()
    assert first.closes == second.closes == 1
    assert session.close_engines() == 0  # and a second teardown is harmless
