"""Done-when of issue 24: a labelled ``.sav`` -> ``data import`` -> ``issp`` (the project's fake OpenAI
server) -> ``export``, and back: pyreadstat and R's haven read the survey's own names, labels and
value labels, the run's answers item by item, and source rows that merge onto the source file.
The long export equals the detailed results item by item, for a plain and a circular run.
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

from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import detailed_record, read_detailed, summary_record, write_detailed

pytestmark = pytest.mark.slow  # runs flows on the session's Prefect API (and Rscript)
N = 48
QUESTIONS = {  # name -> (variable label, value labels); -9 is declared user-missing in each
    "Q1": ("How satisfied are you with your life?", {1: "Very", 2: "Fairly", 3: "Not very", 4: "Not at all",
                                                     -9: "No answer"}),
    "Q2": ("Public transport should get more money.",
           {1: "Agree", 2: "Neither", 3: "Disagree", -9: "No answer", 8: "Can't choose"}),
    "vote_Q3": ("Did you vote in the last election?", {1: "Yes", 2: "No", -9: "No answer"}),
}
OTHERS = {"CNTRY": ("Country", {276: "Germany", 392: "Japan"}), "SEX": ("Sex", {1: "Male", 2: "Female"}),
          "AGE": ("Age in years", {}), "WT": ("Design weight", {})}


def write_sav(path: Path, seed: int = 11) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "CNTRY": rng.choice([276.0, 392.0], N), "SEX": rng.choice([1.0, 2.0], N),
        "AGE": rng.integers(18, 90, N).astype(float),
        "Q1": rng.choice([1.0, 2.0, 3.0, 4.0, -9.0], N), "Q2": rng.choice([1.0, 2.0, 3.0, 8.0, -9.0], N),
        "vote_Q3": rng.choice([1.0, 2.0, -9.0], N), "WT": rng.uniform(0.5, 2.0, N).round(4)})
    labels = {**QUESTIONS, **OTHERS}
    pyreadstat.write_sav(frame, path, column_labels={k: v[0] for k, v in labels.items()},
                         variable_value_labels={k: v[1] for k, v in labels.items() if v[1]},
                         missing_ranges={name: [-9] for name in QUESTIONS})
    return path


@pytest.fixture(scope="module")
def study(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The survey, its import, a plain and a circular run against the fake server."""
    folder = tmp_path_factory.mktemp("export")
    sav, data = write_sav(folder / "study.sav"), folder / "Dataset_all"
    socbench("data", "import", str(sav), "--out", str(data), "--questions", ",".join(QUESTIONS),
             "--country", "CNTRY", "--weight", "WT", "--slug", "study", "--sizes", "500")
    runs = {}
    with FakeOpenAIServer() as server:
        for name, extra in (("plain", ("--export", "csv,sav", "--export_wide")),
                            ("circular", ("--circular", "circular")), ("logprobs", ("--mode", "logprobs"))):
            out = folder / name
            socbench("issp", "--api_type", "config", "--api_base", server.url,
                     "--model", "fake-model", "--data_dir", str(data), "--domain_id", "study",
                     "--output_dir", str(out), "--concurrent_requests", "16", *extra)
            runs[name] = out / ("fake-model-logprobs" if name == "logprobs" else "fake-model")
    return {"sav": sav, "data": data, "runs": runs, "folder": folder}


def detailed(run: Path) -> dict:
    (path,) = run.glob("*_detailed.json")
    return read_detailed(path)


@pytest.mark.parametrize("kind", ["plain", "circular"])
def test_long_export_equals_the_detailed_results(study: dict, kind: str) -> None:
    run = study["runs"][kind]
    fmt = "csv" if kind == "plain" else "parquet"
    printed = socbench("export", str(run), "--format", fmt).stdout
    path = run / "export" / f"answers_long.{fmt}"
    assert f"export: {path}" in printed and "note:" not in printed
    everything = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    frame = everything[everything["row_kind"] == "answer"]  # the items as scored
    details = detailed(run)["details"]
    assert len(frame) == len(details) > 0
    variants = everything[everything["row_kind"] == "variant"]  # circular: every other order asked
    jsonl = [json.loads(line) for f in run.glob("*_circular.jsonl") for line in f.read_text().splitlines()]
    asked = [v for v in jsonl if v["pattern"] != v["origin"]]  # order_only: the origin is the item's prompt
    assert bool(jsonl) == (kind == "circular") and len(variants) == len(asked)
    assert variants["correct"].tolist() == [int(v["correct"]) for v in asked]
    source, _ = pyreadstat.read_sav(study["sav"], user_missing=True)
    for row, item in zip(frame.itertuples(), details):
        assert (str(row.person_id), row.question_id) == (str(item["person_id"]), item["question_id"])
        assert str(int(row.true_code)) == item["true_answer"] and bool(row.correct) == item["correct"]
        assert (None if pd.isna(row.model_code) else str(int(row.model_code))) == item["llm_answer"]
        assert source.at[row.source_row - 1, "WT"] == pytest.approx(row.weight)  # the row's own weight
        assert source.at[row.source_row - 1, row.variable] == row.true_code
    assert frame["true_label"].notna().all() and set(frame["domain"]) == {"Study"}


def test_long_export_carries_the_option_probabilities(study: dict, tmp_path: Path) -> None:
    """Logprobs mode: one ``p_<code>`` column per code (-9 -> ``p_m9``), each item's own probabilities."""
    out = tmp_path / "long.dta"
    socbench("export", str(study["runs"]["logprobs"]), "--out", str(out))
    frame, meta = pyreadstat.read_dta(out)
    details = detailed(study["runs"]["logprobs"])["details"]
    assert len(frame) == len(details) and all("option_distribution" in d for d in details)
    columns = [c for c in frame.columns if c.startswith("p_")]
    assert columns == ["p_1", "p_2", "p_3", "p_4"]  # -9 and "Can't choose" (8) are missing, not offered
    for row, item in zip(frame.to_dict("records"), details):
        shown = {f"p_{code}": p for code, p in item["option_distribution"].items()}
        assert shown == pytest.approx({c: row[c] for c in columns if not np.isnan(row[c])})
    assert meta.column_names_to_labels["p_4"] == "Model's probability of code 4"


def _expected(study: dict) -> tuple[pd.DataFrame, object, dict[tuple[int, str], float]]:
    source, meta = pyreadstat.read_sav(study["sav"], user_missing=True)
    answers = {(int(d["person_id"]), d["question_id"]): float(d["llm_answer"])
               for d in detailed(study["runs"]["plain"])["details"] if d["llm_answer"] is not None}
    return source, meta, answers


def _check_values(model: pd.DataFrame, real: pd.DataFrame, source: pd.DataFrame,
                  answers: dict[tuple[int, str], float]) -> None:
    """The model's answers item by item; the real answers merge back onto the source rows."""
    assert len(model) == len(real) == N and list(model["source_row"]) == sorted(model["source_row"])
    for row in model.itertuples(index=False):
        for name in QUESTIONS:
            value = getattr(row, name)
            expected = answers.get((int(row.person_id), name))
            assert (np.isnan(value) if expected is None else value == expected), (row.person_id, name)
    merged = real.merge(source.reset_index().assign(source_row=lambda f: f["index"] + 1), on="source_row",
                        suffixes=("", "_src"))
    assert len(merged) == N
    for name in [*QUESTIONS, "WT"]:
        assert (merged[name] == merged[f"{name}_src"]).all(), name


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_wide_export_reads_back_with_pyreadstat(study: dict, fmt: str) -> None:
    run, out = study["runs"]["plain"], study["folder"] / f"wide.{fmt}"
    printed = socbench("export", str(run), "--wide", "--out", str(out)).stdout
    real_path = out.with_name(f"wide_real.{fmt}")
    assert f"export: {out}" in printed and f"export: {real_path}" in printed
    source, meta, answers = _expected(study)
    reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    extra = {"user_missing": True} if fmt == "sav" else {}
    (model, model_meta), (real, real_meta) = (reader(str(p), **extra) for p in (out, real_path))
    for got in (model_meta, real_meta):
        assert got.column_names == ["source_row", "person_id", "WT", *QUESTIONS]
        for name in [*QUESTIONS, "WT"]:
            assert got.column_names_to_labels[name] == meta.column_names_to_labels[name]
        for name in QUESTIONS:
            assert got.variable_value_labels[name] == meta.variable_value_labels[name]
            if fmt == "sav":  # SPSS declares user-missing codes; Stata keeps -9 as a labelled value
                assert got.missing_ranges[name] == meta.missing_ranges[name]
    _check_values(model, real, source, answers)


R_SCRIPT = """
args <- commandArgs(trailingOnly = TRUE)
d <- if (grepl("sav$", args[1])) haven::read_sav(args[1], user_na = TRUE) else haven::read_dta(args[1])
for (name in names(d)) {
  labels <- attr(d[[name]], "labels")
  cat(name, "\\t", attr(d[[name]], "label"), "\\t",
      paste(unname(labels), names(labels), sep = "=", collapse = ";"), "\\n", sep = "")
}
write.csv(as.data.frame(lapply(d, function(x) as.numeric(unclass(x)))), args[2], row.names = FALSE)
"""


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_wide_export_reads_back_with_r_haven(study: dict, fmt: str, tmp_path: Path) -> None:
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not found: install Debian's r-cran-haven (`make setup` does as root)")
    if subprocess.run(["Rscript", "-e", "library(haven)"], capture_output=True).returncode != 0:
        pytest.skip("R's haven is not installed: apt-get install r-cran-haven (`make setup` does as root)")
    out = tmp_path / f"answers.{fmt}"
    socbench("export", str(study["runs"]["plain"]), "--wide", "--format", fmt, "--out", str(out))
    source, meta, answers = _expected(study)
    script = tmp_path / "read.R"
    script.write_text(R_SCRIPT)
    frames = []
    for path in (out, out.with_name(f"answers_real.{fmt}")):
        values = tmp_path / f"{path.stem}.csv"
        read = subprocess.run(["Rscript", str(script), str(path), str(values)], capture_output=True,
                              text=True, timeout=300)
        assert read.returncode == 0, read.stderr
        lines = [line.split("\t") for line in read.stdout.splitlines() if "\t" in line]
        seen = {fields[0]: fields[1:] for fields in lines}
        assert list(seen) == ["source_row", "person_id", "WT", *QUESTIONS]
        for name in QUESTIONS:
            label, pairs = seen[name]
            assert label == meta.column_names_to_labels[name]
            labels = {float(code): text for code, text in (p.split("=", 1) for p in pairs.split(";"))}
            assert labels == {float(k): v for k, v in meta.variable_value_labels[name].items()}
        frames.append(pd.read_csv(values))
    _check_values(*frames, source, answers)


def test_the_flow_exports_when_the_config_asks(study: dict, tmp_path: Path) -> None:
    """``--export csv,sav --export_wide``: the export task wrote what ``socbench export`` writes."""
    folder = study["runs"]["plain"] / "export"
    assert {"answers_long.csv", "answers_long.sav", "answers_Study.sav", "answers_Study_real.sav"} <= \
        {p.name for p in folder.iterdir()}
    for name, args in (("answers_long.sav", ()), ("answers_Study.sav", ("--wide",))):
        out = tmp_path / name
        socbench("export", str(study["runs"]["plain"]), "--out", str(out), *args)
        ours, _ = pyreadstat.read_sav(folder / name, user_missing=True)
        pd.testing.assert_frame_equal(ours, pyreadstat.read_sav(out, user_missing=True)[0])
    page = (study["runs"]["plain"].parent / "report" / "report.html").read_text()  # the report links them
    assert "href='../fake-model/export/answers_Study_real.sav'" in page


def test_bad_input_is_one_line(tmp_path: Path, demo_data: Path, cli_in_process, capsys) -> None:
    """Not a run folder, a format the name contradicts, --wide on a domain never imported: exit 2."""
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "empty").mkdir()
    write_detailed(run / "Citizenship_detailed.json", detailed_record([], {}))
    (run / "summary.json").write_text(json.dumps(summary_record({"data_dir": str(demo_data)})))
    for args, needle in (((str(tmp_path / "empty"),), "not a run folder"),
                         ((str(run), "--format", "xlsx"), "invalid choice"),
                         ((str(run), "--format", "sav", "--out", str(tmp_path / "a.csv")), "ends in .csv"),
                         ((str(run), "--wide"), "no import metadata"),
                         (("issp", "--export", "sav", "--export_wide", "--domain_id", "1"),
                          "no import metadata"),
                         (("issp", "--export_wide"), "--export_wide: name the formats")):
        code = cli_in_process(["export", *args] if args[0] != "issp" else list(args))
        err = capsys.readouterr().err
        assert code == 2 and needle in err and len(err.splitlines()) == 1, err
    assert not (run / "export").exists()
