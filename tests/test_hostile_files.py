"""Done-when of issue 29 (missing values and exports): hostile-but-real files written by R's haven
(and pyreadstat, and R's write.csv) are imported, run against the project's test server and exported
to .sav, .dta, csv and parquet. The import report counts every kind of missing value under its name
with R's numbers and ``data validate``'s; each export read back by haven holds the source's names (or
the mapping file's), variable labels, value labels and missing declarations; a format that cannot be
written is one line, the others are written, and the run says so and exits non-zero.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from tests.fixtures.hostile_files import CASES, Survey, haven_view, need_r, r_missing_counts

pytestmark = pytest.mark.slow  # runs flows on the session's Prefect API, and Rscript
ROUND_TRIP = ("spss_archive", "stata_archive", "r_export")
SIZE = "500"  # every respondent of a case (96) is in the sample, so validate counts the whole file


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every case written and imported (the one no .dta can hold into a data folder of its own), and R's
    view of each source file."""
    need_r()
    folder = tmp_path_factory.mktemp("hostile")
    data = folder / "Dataset_all"
    sources, views = {}, {}
    for name, case in CASES.items():
        args = case.write(folder)
        into = data if name != "unwritable" else folder / "Unwritable_all"
        socbench("data", "import", *args, "--out", str(into), "--slug", name, "--sizes", SIZE)
        sources[name] = Path(args[0])
        views[name] = haven_view(sources[name])
    return {"folder": folder, "data": data, "sources": sources, "views": views}


def report_counts(report: str) -> dict[str, dict[str, int]]:
    """Per question, the import report's "not scored" counts by reason."""
    out, question = {}, None
    for line in report.splitlines():
        if match := re.match(r"^- (\S+): \d+ options", line):
            question = match.group(1)
        elif question and "not scored: " in line:  # the file's one-line total comes first
            text = line.split("not scored: ", 1)[1]
            out[question] = {} if text == "none" else {
                reason: int(n) for reason, n in (part.rsplit(": ", 1) for part in text.split("; "))}
    return out


@pytest.mark.parametrize("name", [*ROUND_TRIP, "stata_integers"])
def test_every_kind_of_missing_is_counted_as_r_counts_it(study: dict, name: str) -> None:
    """User-missing codes (and a range), Stata's .a-.z (a pyreadstat integer column too, where
    pyreadstat itself misreads system-missing after a tag), system-missing and R's NA: the import
    report, ``data validate`` and R agree per question and kind."""
    case = CASES[name]
    report = report_counts((study["data"] / f"import_report_{name}.md").read_text(encoding="utf-8"))
    checked = json.loads(socbench("data", "validate", "--data_dir", str(study["data"]),
                                  "--domain_id", name, "--dataset_size", SIZE, "--json").stdout)
    (domain,) = checked["domains"].values()
    assert any(r_missing_counts(study["views"][name][q]) for q in case.questions)  # R sees missing values
    for question in case.questions:
        expected = r_missing_counts(study["views"][name][question])
        assert report[question] == expected, question
        assert domain["excluded_by_question"].get(question, {}) == expected, question


def _mapping(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open(encoding="utf-8"))) if path.is_file() else []


def _r_key(code: object) -> str:
    """A code as R prints it: 1.0 -> "1", ".a" -> "NA(a)"."""
    if isinstance(code, str):
        return f"NA({code[1]})" if code.startswith(".") else code
    return f"{code:g}"


def _check_labelled(case: Survey, source: dict, path: Path, fmt: str, mapping: list[dict],
                    real: bool) -> None:
    """The export of ``case`` at ``path``, read back by haven, against the source (via the mapping)."""
    view = haven_view(path)
    names = {row["original"]: row["written"] for row in mapping if row["kind"] == "name"}
    for column in case.columns:
        if column.name not in (*case.questions, case.weight):
            continue
        changed = [row for row in mapping if row["variable"] == column.name]
        got = view[names.get(column.name, column.name)]
        relabelled = [row for row in changed if row["kind"] == "variable label"]
        assert [row["original"] for row in relabelled] in ([], [column.label])  # joins back to the source
        assert got.label == (relabelled[0]["written"] if relabelled else column.label)
        assert len(got.label) <= (80 if fmt == "dta" else 256)
        tags = {row["original"]: row["written"].split()[0] for row in changed  # .dta -> .sav: .a -> -901
                if row["kind"] == "missing value" and row["original"].startswith(".")}
        labels = column.labels.items()
        assert got.labels == {tags.get(str(code), _r_key(code)): label for code, label in labels
                              if not isinstance(code, str) or code.startswith(".")}
        declared = [*map(_r_key, column.na_values)] if fmt == "sav" else []
        codes = sorted(tags.values(), key=float)
        declared += codes if len(codes) <= 3 else []
        assert sorted(got.na_values, key=float) == sorted(declared, key=float), column.name
        span = tuple(map(str, column.na_range)) if fmt == "sav" and column.na_range else None
        assert got.na_range == (span or ((codes[0], codes[-1]) if len(codes) > 3 else None))
        if fmt == "dta" and (column.na_values or column.na_range):  # Stata keeps them as labelled values
            assert [row["original"] for row in changed if row["kind"] == "missing declaration"]
        if real and column.name in case.questions:
            expected: dict[tuple[str, str], int] = {}
            for (kind, code), n in source[column.name].counts.items():
                kind, code = (("user", tags[f".{code[3]}"]) if kind == "tag" and fmt == "sav" else
                              ("system", "NA(NA)") if kind in ("na", "system") else
                              ("value", code) if kind == "user" and fmt == "dta" else (kind, code))
                expected[kind, code] = expected.get((kind, code), 0) + n
            assert got.counts == expected, column.name


def _as_text(value: object) -> str:
    if value is None or pd.isna(value):
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check_plain(case: Survey, path: Path) -> None:
    """csv and parquet: the source's names and every code as recorded (".a", "NA", -9), by source row."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False) if path.suffix == ".csv" else \
        pd.read_parquet(path)
    frame = frame.sort_values("source_row", key=lambda s: s.astype(int))
    for column in case.columns:
        if column.name in case.questions:
            rows = [int(r) - 1 for r in frame["source_row"]]
            assert [_as_text(v) for v in frame[column.name]] == [_as_text(column.values[r]) for r in rows]


@pytest.fixture(scope="module")
def runs(study: dict, api_url: str) -> dict:
    """The cases run against the test server: every domain of the data folder exported in every
    format, long and wide; the unwritable one with ``--export dta,sav --export_wide``."""
    done = {}
    with FakeOpenAIServer() as server:
        for name, data, formats in (("all", study["data"], "csv,parquet,dta,sav"),
                                    ("unwritable", study["folder"] / "Unwritable_all", "dta,sav")):
            out = study["folder"] / f"run_{name}"
            done[name] = (out / "fake-model", socbench(
                "issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                "--data_dir", str(data), "--domain_id", "all", "--output_dir", str(out),
                "--concurrent_requests", "16", "--export", formats, "--export_wide", code=None))
    return done


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_exports_read_back_with_haven_equal_the_source(study: dict, runs: dict, name: str) -> None:
    case = CASES[name]
    folder, run = runs["all"]
    assert run.returncode == 0, run.stderr[-3000:]
    export = folder / "export"
    stem = f"answers_{''.join(part.capitalize() for part in name.split('_'))}"
    written = {p.name for p in export.iterdir()}
    assert {f"answers_long.{fmt}" for fmt in ("csv", "parquet", "dta", "sav")} <= written
    for fmt in ("sav", "dta"):
        mapping = _mapping(export / f"{stem}_{fmt}_mapping.csv")
        for path, real in ((export / f"{stem}.{fmt}", False), (export / f"{stem}_real.{fmt}", True)):
            _check_labelled(case, study["views"][name], path, fmt, mapping, real)
    for fmt in ("csv", "parquet"):
        _check_plain(case, export / f"{stem}_real.{fmt}")


def test_what_stata_cannot_hold_is_changed_once_and_mapped(study: dict, runs: dict, tmp_path: Path) -> None:
    """SPSS's dotted and 40-character names and 81/256-character labels into Stata: deterministic
    names, one printed line per kind of change, every change in the mapping file."""
    folder, _ = runs["all"]
    out = tmp_path / "wide.dta"
    printed = socbench("export", str(folder), "--wide", "--out", str(out)).stdout.splitlines()
    rows = _mapping(tmp_path / "wide_SpssArchive_dta_mapping.csv")
    assert rows == _mapping(folder / "export" / "answers_SpssArchive_dta_mapping.csv")  # the same every time
    rows = [row for row in rows if row["variable"] in CASES["spss_archive"].questions]
    assert {(r["kind"], r["original"], r["written"]) for r in rows if r["kind"] == "name"} == {
        ("name", "Q1.A", "Q1_A"), ("name", "income_differences_government_should_do1",
                                   "income_differences_government_s")}
    kinds = {r["kind"] for r in rows}
    assert kinds == {"name", "variable label", "missing declaration"}
    notes = [line for line in printed if line.startswith("note: wide_SpssArchive.dta: ")]
    assert len(notes) == len(kinds) and all("wide_SpssArchive_dta_mapping.csv" in note for note in notes)
    in_run = [line for line in runs["all"][1].stderr.splitlines()
              if "export note: answers_SpssArchive.dta: " in line]
    assert len(in_run) == len(kinds)  # the run prints them too, once
    assert f"export: {tmp_path / 'wide_SpssArchive_dta_mapping.csv'}" in printed


def test_a_format_that_cannot_be_written_is_one_line_and_the_others_are_written(
        runs: dict, tmp_path: Path) -> None:
    """``--export dta,sav --export_wide`` on a file with a 2,100-character text answer: .sav (long and
    wide) and the long .dta are written; the wide .dta is one line on stderr, in summary.json,
    summary.md and report.html; exit 1, no traceback. ``socbench export`` of it: the line, exit 2."""
    folder, run = runs["unwritable"]
    alone = socbench("export", str(folder), "--wide", "--out", str(tmp_path / "a.dta"), code=2)
    assert alone.stderr.splitlines() == ["socbench: error: a.dta: variable open_q: a text of 2,100 "
                                         "characters; Stata's str# holds at most 2,045 (export it as csv, "
                                         "parquet or sav)"]
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("socbench: error:")]
    assert errors == ["socbench: error: export failed: dta --wide: answers_Unwritable.dta: variable open_q: "
                      "a text of 2,100 characters; Stata's str# holds at most 2,045 (export it as csv, "
                      "parquet or sav)"]
    written = {p.name for p in (folder / "export").iterdir()}
    assert {"answers_long.dta", "answers_long.sav", "answers_Unwritable.sav", "answers_Unwritable_real.sav"} \
        <= written and not {"answers_Unwritable.dta", "answers_Unwritable_real.dta"} & written
    why = errors[0].removeprefix("socbench: error: export failed: ")
    assert json.loads((folder / "summary.json").read_text())["export_failed"] == [why]
    assert why in (folder / "summary.md").read_text()
    assert "export failed</b>: dta --wide: answers_Unwritable.dta" in \
        (folder.parent / "report" / "report.html").read_text()
