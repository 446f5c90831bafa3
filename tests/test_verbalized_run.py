"""Done-when of issue 45's ``--mode verbalized`` through the CLI (in this process), against the project's fake
OpenAI server answering with planted distributions: SimBench's score equals a hand computation from the data
file, a uniform one scores 0, and ``socbench report`` shows them beside a log-probability run of the same
questions (the data: ``test_yardsticks_cli.write_data``, 300 respondents in two countries, two questions)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer, pick_code
from support.records import read_detailed
from tests.test_yardsticks_cli import AGE, write_data

pytestmark = pytest.mark.slow  # runs flows on the session's Prefect API
CODES = ("1", "2", "3", "4")
YOUNG, OLD = (70, 10, 10, 10), (10, 10, 10, 70)  # the planted percentages by age (under 30, 60 and over)


def planted(prompt: str, codes: tuple[str, ...]) -> str:
    """Percentages by the age the persona shows; the preflight's probe gets an ordinary answer."""
    if "percentage" not in prompt:
        return json.dumps({"answer": pick_code(prompt, codes)})
    young = int(AGE.search(prompt).group(1)) < 30
    return json.dumps(dict(zip(CODES, YOUNG if young else OLD)))


def uniform(prompt: str, codes: tuple[str, ...]) -> str:
    """Equal shares that do not sum to 100: normalised, with a note."""
    return json.dumps(dict.fromkeys(CODES, 1)) if "percentage" in prompt else json.dumps({"answer": "1"})


def by_hand(data: Path) -> float:
    """SimBench's score of ``planted`` from the data file: per (country, question) the mean planted
    distribution against the people's, normalised by the mean TV of uniform answers over the rows."""
    people = json.loads((data / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").read_text())
    tv_model, tv_uniform = [], []
    for country in ("Germany", "Japan"):
        group = [p for p in people if p["attributes"]["Country Prefix ISO 3166"] == country]
        model = np.mean([np.array(YOUNG if int(p["attributes"]["Age of respondent"].split()[0]) < 30 else OLD)
                         / 100 for p in group], axis=0)
        for qid in ("V5", "V6"):
            answers = [str(p["questions_answer"][qid]) for p in group]
            human = np.array([answers.count(c) for c in CODES]) / len(group)
            tv_model.append(0.5 * np.abs(model - human).sum())
            tv_uniform.append(0.5 * np.abs(0.25 - human).sum())
    return float(np.mean([100 * (1 - tv / np.mean(tv_uniform)) for tv in tv_model]))


def run(data: Path, out: Path, answer, *extra: str) -> None:
    with FakeOpenAIServer(answer=answer) as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                 "--data_dir", str(data), "--domain_id", "1", "--output_dir", str(out),
                 "--concurrent_requests", "16", *extra)


def test_planted_shares_score_as_by_hand_and_sit_beside_log_probs(api_url: str, tmp_path: Path) -> None:
    data, out = write_data(tmp_path), tmp_path / "out"
    run(data, out, planted, "--mode", "verbalized")
    folder = out / "fake-model-verbalized"
    detailed = read_detailed(folder / "Citizenship_detailed.json")
    assert detailed["yardsticks"]["simbench"]["model"] == pytest.approx(by_hand(data), abs=1e-9)
    for item in detailed["details"]:  # each item's distribution is its persona's; its answer the modal option
        shares = item["option_distribution"]
        assert shares[item["llm_answer"]] == 0.7 and sum(shares.values()) == pytest.approx(1)
    metrics = json.loads((folder / "Citizenship_metrics.json").read_text())["metrics"]
    assert metrics["verbalized_normalised"] == 0 and "verbalized_draw_seed" not in metrics

    run(data, out, uniform, "--mode", "verbalized", "--verbalized_answer", "draw", "--seed", "5")
    folder = out / "fake-model-verbalized-draw"
    detailed = read_detailed(folder / "Citizenship_detailed.json")
    assert detailed["yardsticks"]["simbench"]["model"] == pytest.approx(0, abs=1e-9)
    answers = [item["llm_answer"] for item in detailed["details"]]
    assert set(answers) == set(CODES)  # drawn, not the first option of a tie
    metrics = json.loads((folder / "Citizenship_metrics.json").read_text())["metrics"]
    assert metrics["verbalized_normalised"] == len(answers) and metrics["verbalized_draw_seed"] == 5

    run(data, out, planted, "--mode", "logprobs")
    socbench("report", str(out))
    with (out / "report" / "leaderboard.csv").open() as handle:
        rows = {r["run"]: r for r in csv.DictReader(handle) if r["domain"] == "ALL"}
    assert {"fake-model-verbalized", "fake-model-verbalized-draw", "fake-model-logprobs"} <= set(rows)
    assert rows["fake-model-verbalized"]["variant"] == "verbalized distributions"
    assert rows["fake-model-verbalized-draw"]["variant"] == "verbalized distributions, answers drawn from " \
        "them"
    assert float(rows["fake-model-verbalized"]["simbench_score"]) == pytest.approx(by_hand(data), rel=1e-5)
    assert rows["fake-model-logprobs"]["simbench_score"] != ""  # the same questions, scored by log-probs
    board = (out / "report" / "leaderboard.md").read_text()
    assert "verbalized distributions" in board and "log-prob answers" in board
