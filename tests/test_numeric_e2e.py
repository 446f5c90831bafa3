"""Issue 45, numeric questions, end to end: a file written by R's haven with an unlabelled numeric item
(hours worked, SPSS user-missing 98 "Don't know" / 99 "Refused"; a 0-100 thermometer with system-missing
cells) imports with ``--numeric``, runs against a fake server that answers planted numbers, scores (MAE and
the normalised Wasserstein distance equal a hand computation), estimates (PPI's mean) and exports back as
``.sav`` and ``.dta`` that haven reads with the source's variable, labels and missing codes. A Stata file's
tagged ``.a`` is a missing code of a numeric item too."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed

pytestmark = pytest.mark.slow  # Rscript writes and reads the files; a flow runs on the session's Prefect API

WRITE = r"""
library(haven)
set.seed(7)
n <- 150
hours <- round(runif(n, 0, 60))
hours[1:6] <- 98; hours[7:9] <- 99
therm <- round(runif(n, 0, 100), 1)
therm[10:11] <- NA
d <- data.frame(id = 1:n)
d$sex <- labelled(sample(1:2, n, TRUE), c(Male = 1, Female = 2), label = "Sex of respondent")
d$hours <- labelled_spss(hours, c("Don't know" = 98, "Refused" = 99), na_values = c(98, 99),
                         label = "Hours worked last week")
d$therm <- labelled(therm, c("Very cold" = 0, "Very warm" = 100), label = "Feeling thermometer")
d$trust <- labelled(sample(1:3, n, TRUE), c(Agree = 1, Neither = 2, Disagree = 3), label = "Trust people")
write_sav(d, file.path(args[1], "survey.sav"))
s <- d[c("id", "sex", "trust")]
s$kids <- labelled(c(tagged_na("a"), tagged_na("a"), sample(0:6, n - 2, TRUE)),
                   c("Don't know" = tagged_na("a")), label = "Number of children")
write_dta(s, file.path(args[1], "survey.dta"))
"""

READ = r"""
library(haven); library(jsonlite)
out <- list()
for (path in args) {
  d <- if (grepl("[.]sav$", path)) read_sav(path, user_na = TRUE) else read_dta(path)
  out[[basename(path)]] <- lapply(d[c("hours", "therm")], function(x) list(
    label = attr(x, "label"), labels = as.list(attr(x, "labels")),
    na_values = as.list(attr(x, "na_values")), values = as.character(unclass(x))))
}
cat(toJSON(out, auto_unbox = TRUE, null = "null", na = "null"))
"""


def rscript(code: str, *args: str) -> str:
    done = subprocess.run(["Rscript", "-e", f"args <- commandArgs(TRUE)\n{code}", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    probe = ["Rscript", "-e", "library(haven); library(jsonlite)"]
    if shutil.which("Rscript") is None or subprocess.run(probe, capture_output=True).returncode:
        pytest.skip("R's haven and jsonlite are not installed (make setup installs them as root)")
    folder = tmp_path_factory.mktemp("numeric")
    rscript(WRITE, str(folder))
    return folder


def planted(prompt: str, codes: tuple[str, ...]) -> str:
    """Hours: 40 for men, 30 for women; the thermometer: 50; an option question: its first code."""
    if "Hours worked" in prompt:
        return json.dumps({"answer": 40 if '"Male"' in prompt else 30})
    return json.dumps({"answer": 50 if "Feeling thermometer" in prompt else codes[0]})


@pytest.fixture(scope="module")
def run(files: Path, api_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("numeric-run")
    data = folder / "data"
    printed = socbench("data", "import", str(files / "survey.sav"), "--out", str(data), "--questions",
                       "trust", "--numeric", "hours,therm=0:100", "--sizes", "all",
                       "--roles", "sex=sex").stderr
    with FakeOpenAIServer(model="planted", answer=planted) as server:
        socbench("issp", "--api_type", "openai", "--api_base", server.url, "--model", "planted",
                 "--data_dir", str(data), "--dataset_size", "all", "--output_dir", str(folder / "out"),
                 "--engine", '{"structured_mode": "json_schema"}')
    result = folder / "out" / "planted"
    socbench("estimate", str(result), "--fraction", "0.4", "--repeats", "10")
    for fmt in ("sav", "dta"):
        socbench("export", str(result), "--wide", "--format", fmt)
    socbench("report", str(folder / "out"))
    return {"data": data, "result": result, "printed": printed, "report": folder / "out" / "report"}


def test_the_import_declares_range_and_missing_codes(run: dict) -> None:
    records = json.loads((run["data"] / "q&a" / "issp_qa_survey.json").read_text())
    questions = {q["question_id"]: q for q in records}
    low, high = questions["hours"]["numeric"]
    assert 0 <= low < 5 and 55 < high <= 60 and questions["hours"]["answer"] == {}  # the data's, 98/99 aside
    assert questions["hours"]["missing"] == {"98": "Don't know", "99": "Refused"}
    assert questions["therm"]["numeric"] == [0, 100] and questions["therm"]["answer"] == {}
    assert "missing code 98 (Don't know): 6" in run["printed"]
    assert "missing code 99 (Refused): 3" in run["printed"]


def _items(run: dict, qid: str) -> list[dict]:
    lines = (run["result"] / "Survey_items.jsonl").read_text().splitlines()
    return [row for row in map(json.loads, lines) if row["question_id"] == qid]


def test_scores_equal_a_hand_computation(run: dict) -> None:
    record = read_detailed(run["result"] / "Survey_detailed.json")["numeric"]
    for qid, low, high in (("hours", None, None), ("therm", 0.0, 100.0)):
        rows = _items(run, qid)
        truth = np.array([float(r["true_answer"]) for r in rows])
        model = np.array([float(r["llm_answer"]) for r in rows])
        got = record["questions"][qid]
        low, high = got["range"] if low is None else (low, high)
        assert got["answered"] == len(rows) and got["mae"] == pytest.approx(np.abs(model - truth).mean())
        assert got["wasserstein"] == pytest.approx(wasserstein_distance(model, truth) / (high - low))
        assert got["baselines"]["median_group"] == pytest.approx(np.abs(np.median(truth) - truth).mean())
        assert "demographic" in got["baselines"]
    assert len(_items(run, "hours")) == 150 - 9 and len(_items(run, "therm")) == 150 - 2
    html = (run["report"] / "report.html").read_text()  # report.html: a row per numeric question
    section = html[html.index("<h3 id='numeric'>"):]
    for qid in ("hours", "therm"):
        mae = record["questions"][qid]["mae"]
        assert f">{qid}<" in section and f"{record['questions'][qid]['answered']} of" in section, qid
        assert f"{mae:.3f}"[:4] in section


def test_out_of_range_and_unreadable_numbers_are_counted_failures() -> None:
    from socbench.extract import NOT_A_NUMBER, OUT_OF_RANGE, extract_number

    assert extract_number('{"answer": 200}', (0, 100)) == (None, OUT_OF_RANGE)
    assert extract_number('{"answer": "many"}', (0, 100)) == (None, NOT_A_NUMBER)
    assert extract_number('{"answer": "37.5"}', (0, 100)) == ("37.5", None)


def test_estimate_gives_ppi_means_of_numeric_items(run: dict) -> None:
    """A numeric item's one target is its mean: the full sample's is the people's mean; a constant model
    (the thermometer's 50) adds nothing (PPI correlation 0, gain 1), hours planted by sex carry some."""
    domain = json.loads((run["result"] / "estimates.json").read_text())["domains"][0]
    found = {q["question_id"]: q["estimates"][0] for q in domain["questions"]}
    for qid in ("hours", "therm"):
        truth = [float(r["true_answer"]) for r in _items(run, qid)]
        assert found[qid]["target"] == "mean" and found[qid]["full_sample"] == pytest.approx(np.mean(truth))
    assert found["therm"]["rho"] == 0 and found["therm"]["gain"] == 1
    assert found["hours"]["rho"] != 0


def test_the_wide_export_reads_back_by_haven_with_labels_and_missing_codes(run: dict, files: Path) -> None:
    export = run["result"] / "export"
    paths = [files / "survey.sav", export / "answers_Survey_real.sav", export / "answers_Survey.sav",
             export / "answers_Survey_real.dta"]
    got = json.loads(rscript(READ, *map(str, paths)))
    source = got["survey.sav"]
    for name in ("answers_Survey_real.sav", "answers_Survey.sav", "answers_Survey_real.dta"):
        for var in ("hours", "therm"):
            assert got[name][var]["label"] == source[var]["label"], (name, var)
            assert got[name][var]["labels"] == source[var]["labels"], (name, var)
        if name.endswith(".sav"):
            assert got[name]["hours"]["na_values"] == source["hours"]["na_values"] == [98, 99]
    real = got["answers_Survey_real.sav"]["hours"]["values"]
    assert sorted(real, key=str) == sorted(source["hours"]["values"], key=str)  # 98 and 99 kept as recorded
    model = got["answers_Survey.sav"]["hours"]["values"]
    assert set(model) - {None} == {"40", "30"}


def test_a_stata_tagged_missing_is_a_numeric_item_s_missing_code(files: Path, tmp_path: Path) -> None:
    printed = socbench("data", "import", str(files / "survey.dta"), "--out", str(tmp_path / "d"),
                       "--numeric", "kids", "--sizes", "all").stderr
    question = json.loads((tmp_path / "d" / "q&a" / "issp_qa_survey.json").read_text())[0]
    assert question["numeric"] == [0, 6] and question["missing"] == {".a": "Don't know"}
    assert "Stata missing .a (Don't know): 2" in printed
