"""Every request of a run is sent by the flow's ``vllm_generate`` and nowhere else (issue 44): the CLI
process, on its own Prefect API (none named by ``PREFECT_API_URL``), sends nothing while that API starts,
and says how long the run waited for it. Why: the early sending that overlapped the API's start coupled
the CLI to the flow through globals and once sent a request twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.processes import user_prefect_home
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow  # a socbench process with its own Prefect API

# each engine call records whether a frame of the flow's vllm_generate stage is on its stack
WATCH = """
import json, sys, traceback
from socbench.engines.openai_api import OpenAIEngine
from socbench.cli import main
calls = []
def watched(name):
    method = getattr(OpenAIEngine, name)
    def call(self, requests, *args, **kwargs):
        stack = [frame.filename for frame in traceback.extract_stack()]
        calls.append({"method": name, "requests": len(requests),
                      "in_flow": any(f.endswith("tasks/vllm_generate.py") for f in stack)})
        return method(self, requests, *args, **kwargs)
    return call
for name in ("generate", "option_logprobs", "loglikelihood"):
    setattr(OpenAIEngine, name, watched(name))
code = main(sys.argv[2:])
open(sys.argv[1], "w").write(json.dumps(calls))
sys.exit(code)
"""


def test_the_cli_sends_requests_only_from_the_flow(tmp_path: Path, demo_data: Path, prefect_db) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(user_prefect_home(tmp_path / "prefect", prefect_db), OPENAI_API_KEY="sk-unused")
    calls = tmp_path / "calls.json"
    with FakeOpenAIServer() as server:
        args = ["issp", "--data_dir", str(demo_data), "--domain_id", "all", "--start_domain_id", "9",
                "--interview_count", "2", "--api_type", "openai", "--api_base", server.url,
                "--model", "fake-model", "--output_dir", str(tmp_path / "out")]
        done = subprocess.run([sys.executable, "-c", WATCH, str(calls), *args], env=env, capture_output=True,
                              text=True, timeout=600)
        sent = server.stats().requests
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(calls.read_text())
    assert seen and all(call["in_flow"] for call in seen), seen
    # each request once, all of them the flow's; beside them only the preflight's one 16-token probe of the
    # server's structured output (``check_structured``), which a bad server must fail before any work
    assert sum(call["requests"] for call in seen) + 1 == sent > 1
    assert "s for its own Prefect API" in done.stderr
