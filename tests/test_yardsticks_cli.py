"""Done-when of issue 23 through the CLI (in this process): a planted signal, and who keeps it.

A data folder written here: 300 respondents, half under 30 and half over 60; 90% of the
under-30s answer the planted question V5 with 1 and 90% of the over-60s with 4 (the rest
uniformly); V6 is noise. ``socbench issp`` runs it against the project's fake OpenAI server:

* a server that always answers 1 keeps none of the structure: every simulated association 0,
  no planted gap reproduced, heterogeneity ratio 0;
* a server answering by the same rule (the age read from the persona in the prompt) reproduces
  the planted gaps with the right signs and a structure correlation near 1;
* the demographic model finds the rule (accuracy >= 0.8 on V5), and in the ``--no_persona``
  control run, which shows no attribute, it cannot (an intercept model);
* ``socbench report`` puts them in the leaderboard.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from socbench.metrics.structure_difference import measurable
from socbench.report.answers import VERDICTS
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer, pick_code
from support.records import read_detailed

pytestmark = pytest.mark.slow  # runs flows on the session's Prefect API
N = 300
ANSWERS = {"1": "Very important", "2": "Fairly important", "3": "Not very important", "4": "Not important"}
PLANTED = "How important is voting in every election?"
AGE = re.compile(r'"Age of respondent": "(\d+)')


def write_data(root: Path, seed: int = 7) -> Path:
    """A one-domain data folder in the SocioBench layout, written as JSON."""
    rng = np.random.default_rng(seed)
    folder = root / "Dataset_all"
    (folder / "q&a").mkdir(parents=True)
    (folder / "A_GroundTruth_sampling500").mkdir()
    qa = [{"question_id": "V5", "question": PLANTED, "answer": ANSWERS, "special": {}},
          {"question_id": "V6", "question": "How important is obeying every law?", "answer": ANSWERS,
           "special": {}}]
    people = []
    for i in range(N):
        age = int(rng.integers(18, 30) if i % 2 else rng.integers(61, 90))
        rule = 1 if age < 30 else 4
        people.append({"person_id": 10000001 + i,
                       "attributes": {"Country Prefix ISO 3166": str(rng.choice(["Germany", "Japan"])),
                                      "Sex of Respondent": str(rng.choice(["Male", "Female"])),
                                      "Age of respondent": f"{age} years"},
                       "questions_answer": {"V5": rule if rng.random() < 0.9 else int(rng.integers(1, 5)),
                                            "V6": int(rng.integers(1, 5))}})
    (folder / "q&a" / "issp_qa_citizenship.json").write_text(json.dumps(qa))
    (folder / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").write_text(json.dumps(people))
    return folder


def always_one(prompt: str, codes: tuple[str, ...]) -> str:
    return json.dumps({"answer": "1"})


def by_age(prompt: str, codes: tuple[str, ...]) -> str:
    """The planted rule on the age the persona shows (none shown: 1); other questions as usual."""
    if PLANTED not in prompt:
        return json.dumps({"answer": pick_code(prompt, codes)})
    age = AGE.search(prompt)
    return json.dumps({"answer": "4" if age and int(age.group(1)) >= 30 else "1"})




def issp(data: Path, out: Path, answer, *extra: str) -> dict:
    """One run against a fake server answering with ``answer``; its yardsticks."""
    with FakeOpenAIServer(answer=answer) as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                 "--data_dir", str(data), "--domain_id", "1", "--output_dir", str(out),
                 "--concurrent_requests", "16", *extra)
    folder = out / ("fake-model-no_persona" if extra else "fake-model")
    detailed = read_detailed(folder / "Citizenship_detailed.json")
    metrics = json.loads((folder / "Citizenship_metrics.json").read_text())
    assert detailed["yardsticks"] == metrics["yardsticks"]
    found = detailed["yardsticks"]
    assert detailed["baselines"]["demographic_model"] == found["demographic_model"]["accuracy"]
    return found


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_data(tmp_path_factory.mktemp("planted"))


def test_always_one_keeps_none_of_the_structure(api_url: str, data: Path, tmp_path: Path) -> None:
    found = issp(data, tmp_path / "out", always_one)
    assert found["demographic_model"]["per_question"]["V5"]["accuracy"] >= 0.8
    model = found["structure"]["model"]
    assert model["pairs"] == 6  # 2 questions x (age group, sex, country)
    assert model["mean_simulated_v"] == 0 and model["mean_real_v"] > 0.05  # every simulated V is 0
    assert model["gaps"] >= 1 and model["gaps_same_sign"] == 0 and model["sign_agreement"] == 0
    assert model["heterogeneity_ratio"] == 0 and model["profile_correlation"] is None
    assert found["simbench"]["model"] < found["simbench"]["demographic_model"]


def test_the_rule_keeps_the_structure_and_no_persona_hides_it(api_url: str, data: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "out"
    found = issp(data, out, by_age)
    assert found["demographic_model"]["per_question"]["V5"]["accuracy"] >= 0.8
    model = found["structure"]["model"]
    assert model["profile_correlation"] == pytest.approx(1, abs=0.1)
    assert model["gaps"] >= 1 and model["gaps_same_sign"] == model["gaps"]
    control = issp(data, out, by_age, "--no_persona")
    assert control["demographic_model"]["per_question"]["V5"]["accuracy"] < 0.6  # sees no age
    assert control["structure"]["model"]["mean_simulated_v"] == 0  # the control answers 1 to everyone
    socbench("report", str(out))
    board = (out / "report" / "leaderboard.md").read_text()
    assert "## Yardsticks" in board and "demographic model accuracy" in board
    with (out / "report" / "leaderboard.csv").open() as handle:
        rows = {(r["run"], r["domain"]): r for r in csv.DictReader(handle)}
    main = rows[("fake-model", "ALL")]
    assert float(main["simbench_score"]) == pytest.approx(found["simbench"]["model"], rel=1e-5)
    assert float(main["structure_correlation"]) == pytest.approx(model["profile_correlation"], rel=1e-5)
    comparison = found["structure"]["comparison"]  # the rule against the classifier, with its uncertainty
    classifier = found["structure"]["demographic_model"]["profile_correlation"]
    assert comparison["difference"] == pytest.approx(model["profile_correlation"] - classifier, abs=1e-9)
    assert comparison["ci_low"] <= comparison["difference"] <= comparison["ci_high"]
    verdict = VERDICTS[measurable(comparison)].split(" ({}")[0]
    assert verdict in board and "it carries structure the attributes alone do not" not in board
