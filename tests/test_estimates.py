"""Issue 31 at the library level and through ``socbench estimate`` on a run folder written here.

Planted: people answer a 1-5 scale (women one step higher); a model answers each question with the
truth with probability p, else uniformly; a constant model always says 3. The effective-sample-size
gain must rise with p and be about 1 at p = 0 (exactly 1 for the constant model), and over repeated
splits both intervals must hold the full-sample value about 95% of the time.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

from socbench.cli import main
from socbench.errors import ConfigError
from socbench.estimates.items import COLUMNS, run_items
from socbench.estimates.study import Settings, estimate_items
from support.records import detailed_record, summary_record, write_detailed

CODES = ("1", "2", "3", "4", "5")
PS = {"Q0": 0.0, "Q1": 0.5, "Q2": 0.9, "Q3": "constant"}
REPEATS = 200
# Monte Carlo error of a 95% coverage over REPEATS splits; 3.5 of them either side
TOLERANCE = 3.5 * math.sqrt(0.95 * 0.05 / REPEATS)


def planted(people: int = 800, seed: int = 5, ps: dict = PS) -> pd.DataFrame:
    """Items as ``run_items`` gives them: one domain, two countries, persona groups, no weights."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["female", "male"], people)
    age = rng.choice(["15-29", "30-44", "45-59", "60+"], people)
    country = rng.choice(["DE", "JP"], people)
    rows = []
    for qid, p in ps.items():
        base = rng.dirichlet(np.full(5, 4.0))
        for i in range(people):
            true = str(min(5, int(rng.choice(5, p=base)) + 1 + (sex[i] == "female")))
            model = "3" if p == "constant" else true if rng.random() < p else str(rng.integers(1, 6))
            rows.append({"domain": "Citizenship", "person_id": str(1000 + i), "question_id": qid,
                         "country_code": country[i], "weight": math.nan, "true_code": true,
                         "model_code": model, "model_shares": None, "offered_codes": CODES,
                         "sex": sex[i], "age_group": age[i]})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def record() -> dict:
    return estimate_items(planted(), Settings(fraction=0.25, repeats=REPEATS))


def test_the_gain_rises_with_p_and_coverage_is_nominal(record: dict) -> None:
    (domain,) = record["domains"]
    assert domain["labelled"] == 200 and domain["respondents"] == 800
    heads = {q["question_id"]: {**q, **q["estimates"][0]} for q in domain["questions"]}
    assert all(row["target"] == "mean" for row in heads.values())
    gains = [heads[q]["gain"] for q in ("Q0", "Q1", "Q2")]
    assert 0.97 < gains[0] < 1.1 and gains[0] < gains[1] < gains[2]
    assert gains[2] > 2  # 0.9: ρ ~ 0.85, and 600 unlabelled beside 200 labelled
    assert heads["Q3"]["gain"] == 1 and heads["Q3"]["lambda"] == 0 and heads["Q3"]["gain_spread"] == [1, 1]
    for question in domain["questions"]:
        for est in question["estimates"]:
            if est["group"] != "all":
                continue
            where = (question["question_id"], est["target"])
            assert abs(est["coverage"] - 0.95) < TOLERANCE, where
            assert abs(est["classical_coverage"] - 0.95) < TOLERANCE, where
            assert est["repeats"] == REPEATS
    assert domain["gain"]["questions"] == 4
    low, high = domain["gain"]["median_spread"]
    assert low <= domain["gain"]["median"] <= high or abs(domain["gain"]["median"] - high) < 0.2


def test_shares_gaps_countries_and_the_regression(record: dict) -> None:
    q2 = next(q for q in record["domains"][0]["questions"] if q["question_id"] == "Q2")
    overall = [e for e in q2["estimates"] if e["group"] == "all"]
    assert [e["target"] for e in overall] == ["mean", *(f"share {c}" for c in CODES)]
    assert sum(e["full_sample"] for e in overall[1:]) == pytest.approx(1)
    for e in q2["estimates"]:  # a share's intervals on the logit scale, the mean's Wald (issue 42)
        for centre, bounds in ((e["estimate"], e["ci"]), (e["classical"], e["classical_ci"])):
            scale = logit if e["target"] != "mean" else float
            assert scale(bounds[0]) + scale(bounds[1]) == pytest.approx(2 * scale(centre), rel=1e-9)
    assert {e["group"] for e in q2["estimates"]} == {"all", "country=DE", "country=JP"}
    sex = next(g for g in q2["gaps"] if g["attribute"] == "sex")
    assert sex["groups"] == ["female", "male"] and sex["full_sample"] > 0.5  # planted: women one step up
    assert sex["ci"][0] < sex["full_sample"] < sex["ci"][1] and sex["gain"] > 1.5
    age = next(g for g in q2["gaps"] if g["attribute"] == "age_group")
    assert age["groups"] == ["15-29", "60+"]
    regression = q2["regression"]
    assert regression["family"] == "ols" and regression["reference"]["sex"] in ("female", "male")
    male = next(t for t in regression["terms"] if t["term"] == "sex=male" or t["term"] == "sex=female")
    assert abs(male["full_sample"]) > 0.5 and male["ci"][0] < male["full_sample"] < male["ci"][1]
    assert male["ci"][1] - male["ci"][0] < male["classical_ci"][1] - male["classical_ci"][0]


def test_groups_and_gaps_are_named_as_the_survey_names_them() -> None:
    """Issue 42: a province was keyed ``country=AB``, and youngest minus oldest were ISSP's bands: the
    key is the grouping variable's (``province=AB``), the age groups the source's, ordered by age."""
    items = planted(people=400, ps={"Q0": 0.9})
    bands = {"15-29": "(0,19]", "30-44": "(19,39]", "45-59": "(39,59]", "60+": "(59,Inf]"}
    items["age_group"] = items["age_group"].map(bands)
    items["sex"] = items["sex"].map({"female": "Woman", "male": "Man"})
    items["country_code"] = items["country_code"].map({"DE": "AB", "JP": "NL"})
    items["grouping"] = "province"
    items.loc[items["person_id"].isin(["1000", "1001", "1002"]), "age_group"] = "90 and over"  # too few
    (question,) = estimate_items(items, Settings(labelled=200, repeats=5))["domains"][0]["questions"]
    assert {e["group"] for e in question["estimates"]} == {"all", "province=AB", "province=NL"}
    gaps = {g["attribute"]: g["groups"] for g in question["gaps"]}
    assert gaps == {"sex": ["Man", "Woman"], "age_group": ["(0,19]", "(59,Inf]"]}
    terms = {t["term"] for t in question["regression"]["terms"]}
    assert terms <= {"intercept", "sex=Man", "sex=Woman", *(f"age_group={b}" for b in bands.values())}


def test_a_binary_question_gets_a_logistic_regression_and_a_missing_answer_is_imputed() -> None:
    items = planted(people=300, ps={"Q0": 0.8})
    items["true_code"] = np.where(items["true_code"].astype(int) >= 4, "1", "2")
    items["model_code"] = np.where(items["model_code"].astype(int) >= 4, "1", "2").astype(object)
    items.loc[items.index[:30], "model_code"] = None  # unreadable replies
    items["offered_codes"] = [("1", "2")] * len(items)
    (question,) = estimate_items(items, Settings(labelled=100, repeats=20))["domains"][0]["questions"]
    assert question["target"] == "share 1" and question["regression"]["family"] == "logistic"
    assert question["no_model_answer"] == 30 and question["estimates"][0]["gain"] > 1


def write_run(folder: Path, items: pd.DataFrame, data_dir: Path | None = None) -> Path:
    """A run folder as ``socbench issp`` writes it (the fields the estimates read)."""
    folder.mkdir(parents=True)
    details = [{"person_id": int(r.person_id), "question_id": r.question_id, "country_code": r.country_code,
                "true_answer": r.true_code, "llm_answer": r.model_code,
                "correct": r.true_code == r.model_code, "parse_error": None if r.model_code else "no JSON",
                "offered_codes": list(r.offered_codes)} for r in items.itertuples()]
    people = items[["person_id", "sex", "age_group"]].drop_duplicates()
    groups = {str(pid): {"sex": s, "age_group": a} for pid, s, a in people.itertuples(index=False)}
    options = [[c, f"label {c}"] for c in CODES]
    questions = {qid: {"options": options} for qid in items["question_id"].unique()}
    detailed = {**detailed_record(details, questions, model="fake-model"), "persona_groups": groups,
                "weighted_metrics_off": None}
    write_detailed(folder / "Citizenship_detailed.json", detailed)
    if data_dir is not None:
        summary = summary_record({"data_dir": str(data_dir), "dataset_size": 500, "interview_count": "all"})
        (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def write_data(root: Path, items: pd.DataFrame, weights: dict[str, float]) -> Path:
    """The SocioBench data folder the run read, with design weights."""
    data = root / "Dataset_all"
    (data / "q&a").mkdir(parents=True)
    (data / "A_GroundTruth_sampling500").mkdir()
    qa = [{"question_id": q, "question": f"Question {q}?", "answer": {c: f"label {c}" for c in CODES},
           "special": {}} for q in items["question_id"].unique()]
    people = [{"person_id": int(pid), "attributes": {"Sex of Respondent": "Female"}, "weight": weights[pid],
               "questions_answer": dict(zip(frame["question_id"], frame["true_code"].astype(int)))}
              for pid, frame in items.groupby("person_id", sort=False)]
    (data / "q&a" / "issp_qa_citizenship.json").write_text(json.dumps(qa))
    (data / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").write_text(json.dumps(people))
    return data


def test_run_items_reads_answers_groups_and_design_weights(tmp_path: Path) -> None:
    items = planted(people=60, ps={"Q0": 0.5, "Q1": 0.9})
    weights = {pid: 0.5 + i % 3 for i, pid in enumerate(items["person_id"].unique())}
    run = write_run(tmp_path / "run", items, write_data(tmp_path, items, weights))
    read = run_items(run)
    assert list(read.columns) == [*COLUMNS, "sex", "age_group"] and len(read) == len(items)
    assert read["person_id"].tolist() == items["person_id"].tolist()
    for column in ("question_id", "country_code", "true_code", "model_code", "sex", "age_group"):
        assert read[column].tolist() == items[column].tolist(), column
    assert read["weight"].tolist() == [weights[p] for p in items["person_id"]]
    assert read.attrs["notes"] == [] and read.attrs["run"] == "run" and read.attrs["model"] == "fake-model"
    bare = run_items(write_run(tmp_path / "bare", items))
    assert bare["weight"].isna().all() and "unweighted" in bare.attrs["notes"][0]


def test_socbench_estimate_prints_the_table_and_writes_the_record(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path / "run", planted(people=400))
    code = main(["estimate", str(run), "--fraction", "0.25", "--repeats", "40", "--budget", "10000",
                 "--cost_human", "20", "--cost_model", "0.05"])
    out = capsys.readouterr().out
    assert code == 0
    record = json.loads((run / "estimates.json").read_text())
    assert record["settings"]["fraction"] == 0.25 and record["notes"]  # no data folder: unweighted, said so
    rows = [q["estimates"][0] for domain in record["domains"] for q in domain["questions"]]
    table = [line for line in out.splitlines() if line.startswith("|")]
    words = [line for line in out.splitlines() if not line.startswith(("note:", "estimates:"))]  # paths
    assert len(rows) == 4 and len(table) == 6 and max(map(len, words)) <= 120
    for row in rows:
        assert f"{row['estimate']:.3f} [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]" in out
    assert "Citizenship: these answers are worth" in out and "x your sample (n = 100 of 400" in out
    assert "budget: " in out and record["domains"][0]["plan"]["cost"] <= 10000
    assert f"estimates: {run / 'estimates.json'}" in out


@pytest.mark.parametrize("args, message", [
    (["--budget", "100"], "--budget: the budget planner needs --budget, --cost_human and --cost_model"),
    (["--labelled", "400"], "--labelled 400: Citizenship has 400 respondents"),
    (["--fraction", "1.5"], "--fraction: expected a fraction between 0 and 1"),
    (["--labelled", "50", "--fraction", "0.2"], "not allowed with argument"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    run = write_run(tmp_path / "run", planted(people=400, ps={"Q0": 0.5}))
    with pytest.raises(SystemExit) if "expected" in message or "allowed" in message else _nothing() as caught:
        code = main(["estimate", str(run), *args])
    code = caught.value.code if caught else code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (run / "estimates.json").exists()


def test_a_domain_too_small_for_the_fraction_is_left_out_and_said_so() -> None:
    items = pd.concat([planted(people=300, ps={"Q0": 0.5}),
                       planted(people=60, ps={"Q0": 0.5}).assign(domain="Family")])
    record = estimate_items(items, Settings(repeats=5))  # 10%: 30 and 6 labelled
    assert [d["domain"] for d in record["domains"]] == ["Citizenship"]
    assert record["notes"] == ["Family: left out: 60 respondents, 6 labelled, fewer than the 10 an interval "
                               "needs (give --labelled or a larger --fraction)"]
    with pytest.raises(ConfigError, match="--fraction 0.1: Family: left out"):
        estimate_items(items[items["domain"] == "Family"], Settings(repeats=5))


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["estimate", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


class _nothing:  # noqa: N801 - a context manager that catches nothing
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_k_draws_reach_the_estimator_as_the_shares_the_item_stores() -> None:
    """--samples K: ``draws.modal_extraction`` stores the draws' shares as the item's distribution, the one
    place the estimator reads the model's shares from (an unreadable draw is left out of them)."""
    from socbench.draws import modal_extraction
    from socbench.estimates.items import domain_frame
    from socbench.types import Extraction, ScoredItem

    drawn, _ = modal_extraction([Extraction("1"), Extraction("2"), Extraction("1"),
                                 Extraction(None, "no JSON object")], 4)
    item = ScoredItem(1, "Q1", "DE", "2", drawn.code, False, None, False, ("1", "2"),
                      distribution=drawn.distribution, draws=drawn.draws)
    frame = domain_frame("Work", [item], None, {})
    assert frame["model_shares"].tolist() == [{"1": 2 / 3, "2": 1 / 3}]
    assert frame["model_code"].tolist() == ["1"]
