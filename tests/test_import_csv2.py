"""A CSV as European archives and Excel write it: ';' between fields, decimal commas.

R's ``write.csv2`` writes the survey and its codebook (both ';'-separated, quoted text, the
weights with decimal commas). ``socbench data import --sizes all`` detects the separator and the
decimal mark, keeps every respondent, and ``socbench issp --dataset_size all`` runs it against
the fake server; the weights equal what R's ``read.csv2`` reads. A wrong ``--sep`` is one line
naming the separator.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed

pytestmark = pytest.mark.slow  # Rscript, a run against the fake server on the session's Prefect API
N = 90
WRITE = """
set.seed(3)
d <- data.frame(id = 1:{n}, cntry = rep(c("DE", "FR", "AT"), each = {n} / 3),
                vote = sample(c(1, 2, 3, -9), {n}, TRUE), trust = sample(0:10, {n}, TRUE),
                weight = round(runif({n}, 0.4, 2.5), 3))
write.csv2(d, "{data}", row.names = FALSE)
book <- data.frame(
  variable = c("id", "cntry", "vote", "vote", "vote", "vote", "trust", "trust", "weight"),
  label = c("Respondent id", "Country", "Voted for", "", "", "", "Trust in parliament", "", "Design weight"),
  code = c(NA, NA, 1, 2, 3, -9, 0, 10, NA),
  value_label = c("", "", "Yes", "No", "Did not vote", "No answer", "No trust at all", "Complete trust", ""))
write.csv2(book, "{book}", row.names = FALSE, na = "")
r <- read.csv2("{data}")
writeLines(sprintf("%d %.3f %d", r$id, r$weight, r$vote), "{check}")
"""


def test_semicolon_csv_with_decimal_commas_imports_whole_and_runs(api_url: str, tmp_path: Path) -> None:
    data, book, check = tmp_path / "survey.csv", tmp_path / "codebook.csv", tmp_path / "r.txt"
    script = WRITE.format(n=N, data=data, book=book, check=check)
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, timeout=120)
    assert data.read_text().splitlines()[0] == '"id";"cntry";"vote";"trust";"weight"'
    assert "," in data.read_text().splitlines()[1].split(";")[-1]  # a decimal comma in the weight
    out = tmp_path / "Dataset_all"
    base = ["data", "import", str(data), "--codebook", str(book), "--questions", "vote,trust",
            "--country", "cntry", "--weight", "weight", "--out", str(out)]

    wrong = socbench(*base, "--sep", ",", code=2)
    assert len(wrong.stderr.splitlines()) == 1, wrong.stderr
    assert "separator ','" in wrong.stderr and "--sep ';'" in wrong.stderr and not out.exists()

    done = socbench(*base, "--sizes", "all")
    assert "--dataset_size all" in done.stdout and "## Summary" in done.stderr
    records = json.loads((out / "A_GroundTruth_samplingall" / "issp_answer_survey.json").read_text())
    r_rows = [line.split() for line in check.read_text().splitlines()]
    assert len(records) == N and {r["attributes"]["Respondent id"]: r["weight"] for r in records} == {
        pid: float(weight) for pid, weight, _ in r_rows}

    prompts = socbench("issp", "prompts", "--data_dir", str(out), "--domain_id", "survey",
                       "--dataset_size", "all", "--limit", "2")
    assert "\n0. No trust at all\n1\n2\n3\n" in prompts.stdout  # filled points read as numbers, not "2. 2"

    with FakeOpenAIServer() as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model",
                 "fake-model", "--data_dir", str(out), "--dataset_size", "all",
                 "--output_dir", str(tmp_path / "results"), "--concurrent_requests", "16")
    (detailed_path,) = (tmp_path / "results" / "fake-model").glob("*_detailed.json")
    detailed = read_detailed(detailed_path)
    voted = sum(vote != "-9" for _, _, vote in r_rows)
    assert detailed["total_count"] == N + voted and detailed["excluded_count"] == N - voted
    assert detailed["weighted_metrics_off"] is None  # the decimal-comma weights were read as numbers
