"""The Batch API file socbench writes, read by vLLM's own ``run-batch`` (the offline runner of the same
format) on the tiny model, and its output read back by socbench: the format is the real one, not only the
test server's reading of it. vLLM's runner serves ``/v1/chat/completions`` lines (socbench's chat prompts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_engine_openai import prompt

from socbench.engines.batch import answer_of, batch_line, custom_id, read_output
from socbench.engines.openai_api import OpenAIEngine, OpenAISettings
from socbench.processes import cpu_defaults
from socbench.types import SamplingSettings


@pytest.mark.slow  # vLLM's run-batch in a subprocess on the tiny model (~30-70 CPU s)
def test_vllm_run_batch_reads_the_file_socbench_writes(tiny_model: Path, tmp_path: Path) -> None:
    engine = OpenAIEngine(OpenAISettings(api_base="http://127.0.0.1:9", model=str(tiny_model), batch=True,
                                         batch_dir=tmp_path / "batches"))
    free = SamplingSettings(max_tokens=8)
    requests = [prompt(i, structured=True) for i in range(3)] + [prompt(i, structured=False, sampling=free)
                                                                 for i in range(3, 5)]
    calls = [engine._generate_call(r) for r in requests]
    given, taken = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    given.write_bytes(b"".join(batch_line(call, custom_id(call)) for call in calls))
    env = cpu_defaults({**os.environ, "TORCH_COMPILE_DISABLE": "1"})
    done = subprocess.run([sys.executable, "-m", "vllm.entrypoints.openai.run_batch", "-i", str(given),
                           "-o", str(taken), "--model", str(tiny_model), "--dtype", "float32",
                           "--max-model-len", "2048", "--enforce-eager", "--seed", "0"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_output(taken.read_text())
    assert sorted(rows) == sorted(custom_id(call) for call in calls)
    answers = [answer_of(rows[custom_id(call)], call.parse) for call in calls]
    assert all(error is None for _, error in answers), answers
    for (text, _), request in zip(answers[:3], requests[:3]):  # the regex constraint was honoured
        assert json.loads(text)["answer"] in request.offered_codes
    assert all(isinstance(text, str) for text, _ in answers[3:])
