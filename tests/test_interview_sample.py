"""Issue 29, "Quick runs are samples": ``--interview_count 20`` on a four-country file sorted by
country asks respondents of all four, the same 20 on a rerun and for another model, recorded in the
results; ``--interview_sample first`` keeps the original system's first 20 (one country here).

Against the project's test server (an OpenAI-compatible one on loopback), through the CLI in this
process, its flows on the session's Prefect API.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fixtures.sorted_survey import COUNTRIES, import_sorted_survey
from socbench.data.loaders import load_domain
from socbench.domains import get_domain
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed

pytestmark = pytest.mark.slow  # runs flows on the session's Prefect API


def _issp(url: str, model: str, data: Path, out: Path, *extra: str) -> None:
    socbench("issp", "--api_type", "config", "--api_base", url, "--model", model, "--data_dir", str(data),
             "--interview_count", "20", "--output_dir", str(out), *extra)


def _asked(out: Path, run: str) -> tuple[list[int], dict]:
    metrics = json.loads((out / run / "Values_metrics.json").read_text())
    detailed = read_detailed(out / run / "Values_detailed.json")
    people = metrics["sample"]["person_ids"]
    assert {d["person_id"] for d in detailed["details"]} <= set(people) and len(people) == 20
    summary = json.loads((out / run / "summary.json").read_text())
    (row,) = summary["domains"]
    assert row["sample"] == {k: v for k, v in metrics["sample"].items() if k != "person_ids"}
    assert summary["data"]["interview_sample"] == metrics["sample"]["drawn"]
    return people, metrics["sample"]


def _countries(prompts: list[str]) -> set[str]:
    return {name for name, _ in COUNTRIES.values() if any(name in prompt for prompt in prompts)}


def test_quick_run_asks_every_country_the_same_people_for_every_model(api_url: str, tmp_path: Path) -> None:
    data = import_sorted_survey(tmp_path)
    out = tmp_path / "results"
    prompts: list[str] = []

    def answer(prompt: str, codes: list[str]) -> str:
        prompts.append(prompt)
        return json.dumps({"answer": codes[0]})

    with FakeOpenAIServer(model="model-a", answer=answer) as server:
        _issp(server.url, "model-a", data, out, "--export", "csv", "--export_wide")
        assert _countries(prompts) == {name for name, _ in COUNTRIES.values()}
        people, sample = _asked(out, "model-a")
        assert len(people) == 20 and sample["drawn"] == "stratified" and sample["population"] == 300
        assert sample["strata"] == {"AU": 4, "NO": 3, "SE": 2, "US": 11}  # proportional, every country
        wide = pd.read_csv(out / "model-a" / "export" / "answers_Values.csv")  # the sample joined back
        assert sorted(wide["person_id"]) == people
        sent = server.stats().requests
        _issp(server.url, "model-a", data, out)
        assert server.stats().requests == sent and _asked(out, "model-a")[0] == people  # a rerun: same 20
    with FakeOpenAIServer(model="model-b", answer=answer) as server:
        _issp(server.url, "model-b", data, out)
        assert _asked(out, "model-b")[0] == people  # another model: the same 20, paired
    first20 = load_domain(data, get_domain("values", data), 500, 20, "first")  # --interview_sample first
    assert first20.sample["drawn"] == "first" and first20.sample["strata"] == {"US": 20}  # one country
