"""``socbench.export`` without a run: the long table of a detailed file, every format written and read
back, the labels of the wide table and the format rules (the round trip is tests/test_export.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pyreadstat
import pytest

from socbench.config import EXPORT_FORMATS as FORMATS
from socbench.data.variables import SourceVariable, SourceVariables, read_variables, variables_path
from socbench.errors import ConfigError, DataError
from socbench.export import resolve_format
from socbench.export.source import DomainSource
from socbench.export.tables import long_table, wide_labels
from socbench.export.writers import write_table
from socbench.log.read import read_domain
from support.records import detailed_record, write_detailed

DETAILS = [
    {"person_id": 10000001, "question_id": "V5", "country_code": "DE", "true_answer": "1", "llm_answer": "1",
     "correct": True, "option_distribution": {"1": 0.7, "2": 0.2, "-9": 0.1}},
    {"person_id": 10000002, "question_id": "V5", "country_code": "JP", "true_answer": "2", "llm_answer": None,
     "correct": False, "parse_error": "no JSON object in the reply"},
]


def _domain(tmp_path: Path):
    path = tmp_path / "Citizenship_detailed.json"
    write_detailed(path, detailed_record(DETAILS, {"V5": {"options": [["1", "Yes"], ["2", "No"]]}}))
    return read_domain(path)


def test_long_table_of_a_detailed_file(tmp_path: Path) -> None:
    frame, labels = long_table([(_domain(tmp_path), None)])
    assert list(frame["true_code"]) == [1, 2] and frame["model_code"].isna().tolist() == [False, True]
    assert list(frame["true_label"]) == ["Yes", "No"] and frame["model_label"].tolist()[0] == "Yes"
    assert list(frame["correct"]) == [1, 0] and frame["weight"].isna().all()  # no data folder: blank
    assert list(frame.columns[-3:]) == ["p_m9", "p_1", "p_2"]  # codes in numeric order, -9 -> m9
    assert frame.loc[0, "p_m9"] == 0.1 and frame.loc[1, ["p_1", "p_2"]].isna().all()
    assert labels.columns["p_m9"] == "Model's probability of code -9"


def _provinces(tmp_path: Path) -> tuple[Path, DomainSource]:
    """A detailed file of a study grouped by province (BC, NL) and its import record."""
    details = [{**row, "country_code": code} for row, code in zip(DETAILS, ("BC", "NL"))]
    path = tmp_path / "Ces_detailed.json"
    write_detailed(path, {**detailed_record(details, {"V5": {"options": [["1", "Yes"], ["2", "No"]]}}),
                          "grouping": "Province of residence"})
    group = SourceVariable(name="prov", label="Province of residence", value_labels={"1": "BC", "2": "NL"})
    variables = SourceVariables(source_file="ces.sav", kind="SPSS", rows=2, questions=[], group=group)
    return path, DomainSource(tmp_path / "answers.json", {}, variables)


def test_a_grouping_variable_is_named_as_the_file_names_it_not_a_country(tmp_path: Path) -> None:
    """Issue 42: a province variable's codes (BC, QC, NL) were exported as ``country_code``, labelled "Country
    code (ISSP C_ALPHAN)". The column is the variable's own name and label; a country keeps its column."""
    path, source = _provinces(tmp_path)
    frame, labels = long_table([(read_domain(path), source)])
    assert "country_code" not in frame and frame["prov"].tolist() == ["BC", "NL"]
    assert labels.columns["prov"] == "Province of residence"
    assert not [c for c, label in labels.columns.items() if "country" in f"{c} {label}".lower()]
    frame, labels = long_table([(read_domain(path), None)])  # no data folder: the grouping as recorded
    assert frame["Province of residence"].tolist() == ["BC", "NL"] and "country_code" not in frame
    frame, labels = long_table([(_domain(tmp_path), None)])  # a country stays a country
    assert frame["country_code"].tolist() == ["DE", "JP"] and "Country code" in labels.columns["country_code"]


def test_domains_grouped_differently_keep_a_column_each(tmp_path: Path) -> None:
    """Issue 42 (the battery): a run over a province-grouped and a country-grouped study put both in one
    ``group`` column labelled "Grouping of the respondent's domain: Country code (ISO ...; ISSP C_ALPHAN ...),
    Province ...", naming ISSP for a province and cut at Stata's 80 characters. Each grouping keeps its own
    column, name and label; a domain's rows leave the other's empty."""
    path, source = _provinces(tmp_path)
    frame, labels = long_table([(read_domain(path), source), (_domain(tmp_path), None)])
    assert "group" not in frame and frame["prov"].tolist()[:2] == ["BC", "NL"]
    assert frame["country_code"].tolist()[2:] == ["DE", "JP"] and frame["prov"][2:].isna().all()
    assert labels.columns["prov"] == "Province of residence"
    assert "Country code" in labels.columns["country_code"]


R_READ = """
args <- commandArgs(trailingOnly = TRUE)
d <- if (grepl("sav$", args[1])) haven::read_sav(args[1]) else haven::read_dta(args[1])
for (name in c("prov", "true_label")) cat(name, attr(d[[name]], "label"), paste(d[[name]], collapse = ";"),
                                          "\\n", sep = "\\t")
"""


@pytest.mark.slow  # runs Rscript (R's haven reads the files back)
@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_long_export_read_back_by_haven_keeps_the_survey_s_names(tmp_path: Path, fmt: str) -> None:
    """Issue 42: what R's haven reads back holds the grouping variable under its own name and label and
    the answers' labels as the survey words them."""
    if shutil.which("Rscript") is None or subprocess.run(["Rscript", "-e", "library(haven)"],
                                                         capture_output=True).returncode != 0:
        pytest.skip("R's haven is not installed: apt-get install r-cran-haven (`make setup` does as root)")
    path, source = _provinces(tmp_path)
    frame, labels = long_table([(read_domain(path), source)])
    written = write_table(frame, tmp_path / f"long.{fmt}", fmt, labels)
    script = tmp_path / "read.R"
    script.write_text(R_READ)
    read = subprocess.run(["Rscript", str(script), str(written)], capture_output=True, text=True, timeout=300)
    assert read.returncode == 0, read.stderr
    seen = {fields[0]: fields[1:3] for fields in (line.split("\t") for line in read.stdout.splitlines())}
    assert seen == {"prov": ["Province of residence", "BC;NL"],
                    "true_label": ["Respondent's answer (label)", "Yes;No"]}


def test_draws_and_circular_variants_get_rows_of_their_own(tmp_path: Path) -> None:
    """``row_kind`` answer rows are the detailed items as they are; a --samples item adds one row per
    draw, a circular item one per variant it asked apart from its own prompt (answer mapped back)."""
    drawn = {**DETAILS[0], "draws": ["1", "2", None]}
    path = tmp_path / "Citizenship_detailed.json"
    questions = {"V5": {"options": [["1", "Yes"], ["2", "No"]]}}
    write_detailed(path, detailed_record([drawn, DETAILS[1]], questions))
    variants = [{"qid": "10000002:V5", "pattern": ["1", "2"], "shown": ["1", "2"], "origin": ["1", "2"],
                 "gold": "2", "prediction": None, "parse_error": "no JSON object in the reply"},
                {"qid": "10000002:V5", "pattern": ["2", "1"], "shown": ["2", "1"], "origin": ["1", "2"],
                 "gold": "2", "prediction": "2"}]
    (tmp_path / "Citizenship_circular.jsonl").write_text("".join(json.dumps(v) + "\n" for v in variants))
    frame, _ = long_table([(read_domain(path), None)])
    answers = frame[frame["row_kind"] == "answer"]
    assert answers["model_code"].tolist()[0] == 1 and answers["model_code"].isna().tolist() == [False, True]
    assert answers["correct"].tolist() == [1, 0] and answers["person_id"].tolist() == [10000001, 10000002]
    draws = frame[frame["row_kind"] == "draw"]
    assert draws["draw"].tolist() == [1, 2, 3] and draws["model_code"].tolist()[:2] == [1, 2]
    assert draws["correct"].tolist() == [1, 0, 0]
    assert draws["parse_error"].notna().tolist() == [False, False, True]
    assert (draws["person_id"] == 10000001).all() and draws["p_1"].isna().all()
    (variant,) = frame[frame["row_kind"] == "variant"].to_dict("records")
    assert (variant["person_id"], variant["order"], variant["model_code"]) == (10000002, "2 1", 2)
    assert variant["correct"] == 1
    assert variant["model_label"] == "No" and variant["true_label"] == "No"


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_back(tmp_path: Path, fmt: str) -> None:
    frame, labels = long_table([(_domain(tmp_path), None)])
    path = write_table(frame, tmp_path / f"long.{fmt}", fmt, labels)
    assert [p.name for p in tmp_path.glob("*long*")] == [path.name]  # no temporary file left
    if fmt in ("sav", "dta"):
        back, meta = (pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta)(str(path))
        assert meta.column_names_to_labels["true_code"] == "Respondent's answer (code)"
    else:
        back = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    assert list(back.columns) == list(frame.columns) and len(back) == 2
    assert list(back["true_code"]) == [1, 2] and back.loc[1, "parse_error"] == "no JSON object in the reply"


def test_wide_labels_carry_the_imported_declarations() -> None:
    question = SourceVariable(name="v5", question_id="V5", label="Vote?", missing_ranges=[(-9, -9)],
                              value_labels={"1": "Yes", "2": "No", "-9": "No answer"})
    weight = SourceVariable(name="WEIGHT", label="Design weight")
    labels = wide_labels(SourceVariables(source_file="s.sav", kind="SPSS", rows=3, questions=[question],
                                         weight=weight))
    assert labels.columns["v5"] == "Vote?" and labels.columns["WEIGHT"] == "Design weight"
    assert labels.values == {"v5": {1: "Yes", 2: "No", -9: "No answer"}}
    assert labels.missing == {"v5": [(-9.0, -9.0)]} and "s.sav" in labels.columns["source_row"]


@pytest.mark.parametrize(("fmt", "out", "expected"), [(None, None, "csv"), (None, "a.sav", "sav"),
                                                      ("dta", "a.dta", "dta"), ("parquet", None, "parquet")])
def test_the_format_comes_from_the_flag_or_the_name(fmt, out, expected) -> None:
    assert resolve_format(fmt, Path(out) if out else None) == expected


def test_a_name_that_contradicts_the_format_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"--out a.csv: the name ends in .csv but --format is sav"):
        resolve_format("sav", Path("a.csv"))


@pytest.mark.parametrize("text, says", [
    ("{bad", "Invalid JSON: key must be a string"),
    ('{"source_file": 1}', "field 'source_file': Input should be a valid string")])
def test_a_damaged_import_metadata_file_says_what_is_wrong(tmp_path, text, says) -> None:
    """Failed before the fix: the line ended '(1 validation error for SourceVariables)'."""
    variables_path(tmp_path, "family").write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match="cannot read the import metadata") as raised:
        read_variables(tmp_path, "family")
    assert says in str(raised.value)
