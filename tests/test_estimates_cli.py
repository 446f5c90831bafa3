"""Done-when of issue 31 end to end: ``socbench issp`` against a server that answers the truth with
probability p (else uniformly), then ``socbench estimate`` on the run.

The data folder written here has 400 weighted respondents and one question per p (0, 0.5, 0.9) plus
one the server always answers with 1 (a constant model). The server knows each respondent's real
answers (it reads the case number the persona shows); which requests get the truth is a hash of the
prompt, so the run is the same every time. The estimates must show a gain that rises with p, about
1 at p = 0 and for the constant answers, and the intervals' coverage over repeated splits
within Monte Carlo error of 95%, design weights used.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer, pick_code

pytestmark = pytest.mark.slow  # runs the CLI in this process against a server
N = 400
REPEATS = 200
ANSWERS = {"1": "Strongly agree", "2": "Agree", "3": "Neither", "4": "Disagree", "5": "Strongly disagree"}
QUESTIONS = {"V1": ("Parliament can be trusted.", 0.0), "V2": ("Courts can be trusted.", 0.5),
             "V3": ("The police can be trusted.", 0.9), "V4": ("Newspapers can be trusted.", "constant")}
CASE = re.compile(r'"Case number": "(\d+)"')
TOLERANCE = 3.5 * math.sqrt(0.95 * 0.05 / REPEATS)


def write_data(root: Path, seed: int = 31) -> tuple[Path, dict[tuple[str, str], int]]:
    """A one-domain SocioBench data folder (JSON, design weights) and every real answer."""
    rng = np.random.default_rng(seed)
    folder = root / "Dataset_all"
    (folder / "q&a").mkdir(parents=True)
    (folder / "A_GroundTruth_sampling500").mkdir()
    qa = [{"question_id": qid, "question": text, "answer": ANSWERS, "special": {}}
          for qid, (text, _) in QUESTIONS.items()]
    people, truth = [], {}
    for i in range(N):
        female = bool(rng.random() < 0.5)
        answers = {qid: int(min(5, rng.choice(5, p=[0.1, 0.3, 0.3, 0.2, 0.1]) + 1 + female))
                   for qid in QUESTIONS}
        truth.update({(str(i), qid): code for qid, code in answers.items()})
        people.append({"person_id": 20000001 + i, "weight": round(float(rng.lognormal(0, 0.4)), 4),
                       "attributes": {"Case number": str(i), "Country Prefix ISO 3166": "Germany",
                                      "Sex of Respondent": "Female" if female else "Male",
                                      "Age of respondent": f"{int(rng.integers(18, 90))} years"},
                       "questions_answer": answers})
    (folder / "q&a" / "issp_qa_citizenship.json").write_text(json.dumps(qa))
    (folder / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").write_text(json.dumps(people))
    return folder, truth


def _unit(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16 ** 12


def planted_server(truth: dict[tuple[str, str], int]):
    """The truth with probability p (per question), else a uniform code; "1" for the constant one."""

    def answer(prompt: str, codes: tuple[str, ...]) -> str:
        case = CASE.search(prompt)
        qid, p = next(((qid, p) for qid, (text, p) in QUESTIONS.items() if text in prompt), ("", 0.0))
        if case is None or not qid:  # socbench's test request before the run
            code = pick_code(prompt, codes)
        elif p == "constant":
            code = "1"
        elif _unit("truth:" + prompt) < p:
            code = str(truth[(case.group(1), qid)])
        else:
            code = codes[int(_unit("noise:" + prompt) * len(codes))]
        return json.dumps({"answer": code})

    return answer


def test_a_planted_server_gives_gains_that_rise_with_p_and_nominal_coverage(api_url: str,
                                                                             tmp_path: Path) -> None:
    data, truth = write_data(tmp_path)
    out = tmp_path / "out"
    with FakeOpenAIServer(answer=planted_server(truth)) as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                 "--data_dir", str(data), "--domain_id", "1", "--output_dir", str(out),
                 "--concurrent_requests", "16")
        assert server.stats().requests >= N * len(QUESTIONS)
    run = out / "fake-model"
    shown = socbench("estimate", str(run), "--fraction", "0.25", "--repeats", str(REPEATS),
                     "--budget", "5000", "--cost_human", "10", "--cost_model", "0.01").stdout
    record = json.loads((run / "estimates.json").read_text())
    assert record["notes"] == []  # the design weights were found and used
    (domain,) = record["domains"]
    assert domain["labelled"] == 100 and domain["respondents"] == N
    heads = {q["question_id"]: q["estimates"][0] for q in domain["questions"]}
    assert all(head["target"] == "mean" for head in heads.values())
    assert 0.97 < heads["V1"]["gain"] < 1.1 < heads["V2"]["gain"] < heads["V3"]["gain"]
    assert heads["V3"]["gain"] > 1.8 and heads["V3"]["rho"] > 0.8
    # constant answers: no gain, weighted or not (issue 42: each Hajek mean linearised at its own value)
    assert (heads["V4"]["gain"], heads["V4"]["lambda"], heads["V4"]["rho"]) == (1, 0, 0)
    for question in domain["questions"]:
        for est in question["estimates"]:
            where = (question["question_id"], est["target"])
            if est["full_sample"] >= 0.1:  # every mean, and the shares Wald intervals can carry at n = 100
                assert abs(est["coverage"] - 0.95) < TOLERANCE, where
                assert abs(est["classical_coverage"] - 0.95) < TOLERANCE, where
    # weighted: the full-sample value is the design-weighted mean of everyone's real answers
    people = json.loads((data / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").read_text())
    weights = np.array([p["weight"] for p in people])
    assert heads["V1"]["full_sample"] == pytest.approx(
        np.average([p["questions_answer"]["V1"] for p in people], weights=weights))
    v3 = heads["V3"]
    assert f"{v3['estimate']:.3f} [{v3['ci'][0]:.3f}, {v3['ci'][1]:.3f}]" in shown
    assert "Citizenship: these answers are worth" in shown and "budget: " in shown


def test_a_real_engine_in_logprobs_mode_estimates_from_its_option_shares(api_url: str, shared_engines,
                                                                         cli_in_process, tiny_model: Path,
                                                                         tmp_path: Path) -> None:
    """The same data answered by a real engine (the tiny random model, logprobs mode): the estimator
    reads each answer's option probabilities, and the check holds for a model of no skill. Both commands
    in this process, on the session's in-process vLLM engine."""
    from socbench.estimates.items import run_items

    data, _ = write_data(tmp_path)
    out = tmp_path / "out"
    assert cli_in_process(["issp", "--model", str(tiny_model), "--engine", '{"dtype": "float32"}',
                           "--mode", "logprobs", "--data_dir", str(data), "--domain_id", "1",
                           "--interview_count", "200", "--output_dir", str(out)]) == 0
    (run,) = out.glob("*-logprobs")
    items = run_items(run)
    assert len(items) == 200 * len(QUESTIONS) and items["model_shares"].map(bool).all()
    assert all(sum(shares.values()) == pytest.approx(1, abs=1e-3) for shares in items["model_shares"])
    assert cli_in_process(["estimate", str(run), "--fraction", "0.25", "--repeats", "100"]) == 0
    (domain,) = json.loads((run / "estimates.json").read_text())["domains"]
    tolerance = 3.5 * math.sqrt(0.95 * 0.05 / 100)
    for question in domain["questions"]:
        head = question["estimates"][0]
        assert question["no_model_answer"] == 0 and head["gain"] > 0.95
        assert abs(head["coverage"] - 0.95) < tolerance and abs(head["classical_coverage"] - 0.95) < tolerance
