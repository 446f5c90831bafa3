"""Every real file imports or is refused in one line, and every message of the import tells one set of
numbers (issue 42).

A ``.dta`` written by R's haven whose labelled question is a double with plain system-missing, files
named ``.csv`` that are not CSV, a CSV whose separator changes partway, three missing codes counted
apart, respondents left out for their weight, and a grouping variable that is a province, not a
country: each imported (or refused) through the CLI in this process, and read back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from socbench.cli import main
from socbench.data import load_domain
from socbench.domains import get_domain

BOOK = "variable,label,code,value_label\nid,Respondent id,,\nq1,Trust,1,Yes\nq1,,2,No\n"


def _import(capsys, source: Path, out: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["data", "import", str(source), "--out", str(out), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refused(capsys, source: Path, out: Path, *argv: str) -> str:
    """The one line of a refused import (exit 2, nothing written)."""
    code, _, err = _import(capsys, source, out, "--codebook", str(source.parent / "book.csv"),
                           "--questions", "q1", *argv)
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(source) in err and not out.exists()
    return err


@pytest.mark.parametrize("kind", ["sav", "random"])
def test_a_file_named_csv_that_is_not_one_is_one_line(tmp_path: Path, capsys, kind: str) -> None:
    """A .sav renamed .csv and random bytes: one line naming the file (issue 42: ``_csv.Error`` and a
    traceback)."""
    (tmp_path / "book.csv").write_text(BOOK)
    source = tmp_path / "survey.csv"
    if kind == "sav":
        pyreadstat.write_sav(pd.DataFrame({"id": [1.0, 2.0], "q1": [1.0, 2.0]}), source)
    else:
        source.write_bytes(np.random.default_rng(1).integers(1, 256, 5000, dtype=np.uint8).tobytes())
    err = _refused(capsys, source, tmp_path / "out")
    assert "not a CSV file" in err
    assert ("SPSS .sav" in err) == (kind == "sav")


@pytest.mark.parametrize("line", [4, 9000])  # in the first rows; past the 64 KiB the separator is told from
def test_a_separator_changing_partway_names_the_first_line_that_breaks(tmp_path: Path, capsys,
                                                                       line: int) -> None:
    """The message names the line, with and without --sep; --sep never gets the advice to give --sep
    (issue 42: "give --sep", repeated with --sep; a break past the first rows imported as blanks)."""
    (tmp_path / "book.csv").write_text(BOOK)
    rows = [f"{i},{1 + i % 2}" for i in range(1, 12_000)]
    rows[line - 2] = rows[line - 2].replace(",", ";")  # line 1 is the header
    source = tmp_path / "survey.csv"
    source.write_text("id,q1\n" + "\n".join(rows) + "\n")
    for flags in ((), ("--sep", ",")):
        err = _refused(capsys, source, tmp_path / "out", *flags)
        assert f"line {line} has 1 column(s) where the header has 2" in err and "give --sep" not in err
        assert "it splits with ';'" in err and ("--sep ','" in err) == bool(flags)


def _survey(folder: Path, n: int = 120) -> Path:
    """Three missing codes of one question (30, 40 and 25 answers), two unusable weights, provinces."""
    rng = np.random.default_rng(8)
    answers = np.r_[[95] * 30, [96] * 40, [97] * 25, rng.integers(1, 3, n - 95)]
    weight = rng.uniform(0.5, 2.0, n)
    weight[[3, 50]] = [np.nan, 0.0]
    frame = pd.DataFrame({"id": np.arange(1, n + 1), "province": np.arange(n) % 5 + 1,
                          "q1": answers, "wt": weight}).astype(float)
    path = folder / "survey.sav"
    pyreadstat.write_sav(frame, path, column_labels={"province": "Province", "q1": "Trust", "wt": "Weight"},
                         variable_value_labels={
                             "province": {1: "BC", 2: "QC", 3: "NL", 4: "AB", 5: "ON"},
                             "q1": {1: "Yes", 2: "No", 95: "Refused", 96: "Don't know", 97: "Not asked"}},
                         missing_ranges={"q1": [{"lo": 95, "hi": 97}]})
    return path


def test_each_missing_code_is_counted_by_its_own_label(tmp_path: Path, capsys) -> None:
    """The summary (stderr and report) counts each code as ``data validate`` does (issue 42: "missing
    code 95" for three codes, 30 + 40 + 25)."""
    out = tmp_path / "out"
    code, _, err = _import(capsys, _survey(tmp_path), out, "--questions", "q1", "--sizes", "all",
                           "--weight", "none")
    assert code == 0, err
    summary = next(line for line in err.splitlines() if "answers (respondents x questions)" in line)
    expected = {"missing code 95 (Refused)": 30, "missing code 96 (Don't know)": 40,
                "missing code 97 (Not asked)": 25}
    assert all(f"{reason}: {n}" in summary for reason, n in expected.items()), summary
    assert main(["data", "validate", "--data_dir", str(out), "--dataset_size", "all", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["domains"].values()
    assert report["excluded_by_reason"] == expected


def test_dropped_weights_leave_the_kept_respondents_in_every_count(tmp_path: Path, capsys) -> None:
    """--bad-weights drop: stderr, the report, stdout and the data written say 118, not 120 (issue 42:
    2,231 reported when 2,229 were kept)."""
    out = tmp_path / "out"
    code, printed, err = _import(capsys, _survey(tmp_path), out, "--questions", "q1", "--sizes", "all",
                                 "--weight", "wt", "--bad-weights", "drop")
    assert code == 0, err
    assert "- 118 respondents (2 more in the file left out: no usable weight" in err
    assert "- 118 answers (respondents x questions)" in err
    assert "imported survey.sav: 118 respondents" in printed
    assert "120" not in err.split("## Warnings")[0].replace("120 respondents have", "")
    data = load_domain(out, get_domain("survey", out), "all")
    assert len(data.respondents) == 118


def test_a_province_is_named_as_the_file_names_it_never_a_country(tmp_path: Path, capsys) -> None:
    """``data validate`` (table and --json), the sampling stats and a run's sample record name the grouping
    variable by its own label (issue 42: a "countries" column, "per-country counts" of provinces)."""
    out = tmp_path / "out"
    code, _, err = _import(capsys, _survey(tmp_path), out, "--questions", "q1", "--roles", "group=province",
                           "--weight", "none", "--sizes", "100")
    assert code == 0, err
    stats = json.loads((out / "A_GroundTruth_sampling100" / "sampling_stats_survey.json").read_text())
    assert stats["grouping"] == "Province" and stats["total_groups"] == 5
    assert set(stats["group_distribution"]) == {"BC", "QC", "NL", "AB", "ON"}
    assert not any("countr" in key for key in stats)
    assert main(["data", "validate", "--data_dir", str(out), "--dataset_size", "100"]) == 0
    table = capsys.readouterr().out
    assert "Province groups" in table.splitlines()[1] and "countries" not in table
    assert main(["data", "validate", "--data_dir", str(out), "--dataset_size", "100", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["domains"].values()
    assert report["groups"] == 5 and report["grouping"] == "Province" and "countries" not in report
    sample = load_domain(out, get_domain("survey", out), 100, interview_count=10).sample
    assert sample["stratified_by"] == "Province, proportional (Huntington-Hill)"


@pytest.mark.slow  # R's haven writes the files (Rscript)
def test_a_haven_dta_with_a_double_labelled_question_and_system_missing_imports(tmp_path: Path,
                                                                                 capsys) -> None:
    """A labelled double with plain ``NA`` (no tagged missing) as .dta imports as the .sav does (issue 42:
    ``ufunc 'add' did not contain a loop`` and a traceback)."""
    if shutil.which("Rscript") is None or subprocess.run(["Rscript", "-e", "library(haven)"],
                                                         capture_output=True).returncode != 0:
        pytest.skip("R's haven not found: install Debian's r-cran-haven (`make setup` does as root)")
    script = (f'library(haven); d <- data.frame(id = 1:8); '
              f'd$q1 <- labelled(c(1, 2, NA, 1, 2, 2, NA, 1), c(Yes = 1, No = 2), label = "Do you agree"); '
              f'write_dta(d, "{tmp_path / "q.dta"}"); write_sav(d, "{tmp_path / "q.sav"}")')
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, timeout=120)
    answers = []
    for kind in ("dta", "sav"):
        out = tmp_path / kind
        code, _, err = _import(capsys, tmp_path / f"q.{kind}", out, "--questions", "q1", "--sizes", "all")
        assert code == 0, err
        assert "6 scored; not scored: system-missing (no answer recorded): 2" in err
        answers.append(json.loads((out / "A_GroundTruth_samplingall" / "issp_answer_q.json").read_text()))
    assert answers[0] == answers[1]
