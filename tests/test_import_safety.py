"""Importing never destroys or mixes data, and a bad design weight never passes silently.

Every survey file here is written by pyreadstat or pandas and imported through the real
command line: a domain that exists is written only with ``--replace`` (which leaves nothing
of the old domain, all sample sizes), two files both called ``survey.sav`` collide with a
clear line, a SocioBench folder's own files are not overwritten, ``data validate`` fails on
a domain assembled from different sources or holding unusable weights, ``--bad-weights``
handles what the user chooses and counts it, and a run whose weighted metrics are off says
why in its summary and report.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from socbench.cli import main
from socbench.data import build_items, load_domain
from socbench.data.example_study import SAV_NAME
from socbench.domains import get_domain
from socbench.log.write import write_scored_domain
from socbench.report.html import write_report
from socbench.report.markdown import domain_markdown, write_run_summary
from socbench.scoring import score_domain
from socbench.types import Extraction
from tests.conftest import ROOT

EXAMPLE_SAV = ROOT / "data" / "example_study" / SAV_NAME
BAD_ROWS = {2: -1.0, 5: 0.0, 9: np.nan}  # row index (from 0) -> weight


def _sav(path: Path, n: int = 60, seed: int = 1, weights: dict[int, float] | None = None) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "C_ALPHAN": rng.choice(["DE", "FR", "JP"], n),
        "V5": rng.choice([1.0, 2.0, 3.0], n),
        "WEIGHT": rng.uniform(0.5, 2.0, n).round(4),
    })
    for row, value in (weights or {}).items():
        frame.loc[row, "WEIGHT"] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    pyreadstat.write_sav(frame, path, column_labels={"C_ALPHAN": "Country", "V5": "Question five"},
                         variable_value_labels={"V5": {1: "Yes", 2: "No", 3: "Maybe"}})
    return path


def _import(capsys, source: Path, out: Path, *argv: str) -> tuple[int, list[str], str]:
    code = main(["data", "import", str(source), "--out", str(out), *argv])
    captured = capsys.readouterr()
    return code, [line for line in captured.err.splitlines() if line.strip()], captured.out


def _validate(capsys, data_dir: Path, *argv: str) -> tuple[int, list[str]]:
    code = main(["data", "validate", "--data_dir", str(data_dir), *argv])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------ replace


def test_reimport_needs_replace_and_replace_leaves_nothing_old(tmp_path: Path, capsys) -> None:
    first = _sav(tmp_path / "a" / "survey.sav", seed=1)
    second = _sav(tmp_path / "b" / "survey.sav", n=40, seed=2)  # another file, the same name
    out = tmp_path / "out"
    assert _import(capsys, first, out, "--questions", "V5", "--sizes", "10,20,50")[0] == 0
    before = _files(out)
    for source in (first, second):  # the same file again, and another survey.sav (same default slug)
        code, err, _ = _import(capsys, source, out, "--questions", "V5", "--sizes", "10")
        assert code == 2 and len(err) == 1, err
        assert "domain 'Survey' (slug survey, id 1) already exists" in err[0]
        assert f"from survey.sav (sha256 {_sha(first)[:12]})" in err[0] and "--replace" in err[0]
        assert _files(out) == before  # byte for byte
    code, err, printed = _import(capsys, second, out, "--questions", "V5", "--sizes", "10", "--replace")
    assert code == 0, err
    assert "replaced: domain survey whole; 4 old files not rewritten removed" in printed
    assert sorted(_files(out)) == ["A_GroundTruth_sampling10/issp_answer_survey.json",
                                   "A_GroundTruth_sampling10/sampling_stats_survey.json",
                                   "import_report_survey.md", "q&a/issp_qa_survey.json", "socbench.yaml",
                                   "variables_survey.json"]
    assert not (out / "A_GroundTruth_sampling20").exists() and not (out / "A_GroundTruth_sampling50").exists()
    stats = json.loads((out / "A_GroundTruth_sampling10" / "sampling_stats_survey.json").read_text())
    assert (stats["source_sha256"], stats["source_respondents"]) == (_sha(second), 40)
    assert _validate(capsys, out, "--dataset_size", "10")[0] == 0


def test_a_sociobench_folder_s_own_domain_is_not_overwritten(tmp_path: Path, demo_data: Path, capsys) -> None:
    target = tmp_path / "Dataset_all"
    shutil.copytree(demo_data, target)
    before = _files(target)
    args = ("--questions", "Q1,Q2", "--slug", "family", "--sizes", "500")
    code, err, _ = _import(capsys, EXAMPLE_SAV, target, *args)
    assert code == 2 and len(err) == 1, err
    assert "domain 'Family' (slug family, id 3) already exists" in err[0] and "SocioBench files" in err[0]
    assert _files(target) == before
    code, err, _ = _import(capsys, EXAMPLE_SAV, target, *args, "--replace")
    assert code == 0, err
    records = json.loads((target / "A_GroundTruth_sampling500" / "issp_answer_family.json").read_text())
    assert {key for r in records for key in r["questions_answer"]} == {"Q1", "Q2"}
    assert _validate(capsys, target)[0] == 0


def test_validate_fails_on_a_domain_from_two_sources(tmp_path: Path, capsys) -> None:
    out, other = tmp_path / "out", tmp_path / "other"
    assert _import(capsys, _sav(tmp_path / "a" / "survey.sav", seed=1), out, "--questions", "V5",
                   "--sizes", "10")[0] == 0
    assert _import(capsys, _sav(tmp_path / "b" / "survey.sav", seed=2), other, "--questions", "V5",
                   "--sizes", "20")[0] == 0
    shutil.copytree(other / "A_GroundTruth_sampling20", out / "A_GroundTruth_sampling20")
    code, err = _validate(capsys, out, "--dataset_size", "10")
    assert code == 2 and len(err) == 1, err
    assert "the sample folders of 'survey' come from different sources" in err[0]
    assert "A_GroundTruth_sampling10: survey.sav (sha256" in err[0]
    assert "A_GroundTruth_sampling20: survey.sav (sha256" in err[0]


def test_a_repeated_name_is_one_line_without_traceback(tmp_path: Path, cli_in_process, capsys) -> None:
    """In this process (the real-process promise: tests/test_issp_cli.py, tests/test_config.py)."""
    out = tmp_path / "out"

    def cli(*argv: str) -> int:
        return cli_in_process(["data", "import", *argv, "--out", str(out)])

    assert cli(str(_sav(tmp_path / "life.sav")), "--questions", "V5", "--name", "Life") == 0
    capsys.readouterr()
    before = _files(out)
    code = cli(str(_sav(tmp_path / "work.sav", seed=2)), "--questions", "V5", "--name", "life")
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in stderr, stderr
    assert "--name 'life': domain 1 (slug life)" in lines[0] and "already has that name" in lines[0]
    assert _files(out) == before


def test_a_failed_import_creates_no_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "new" / "deeper" / "out"
    bad = _sav(tmp_path / "bad.sav", weights=BAD_ROWS)
    assert _import(capsys, bad, out, "--questions", "V5")[0] == 2  # refused while planning
    assert _import(capsys, bad, out, "--questions", "V99")[0] == 2
    assert not (tmp_path / "new").exists()

    from socbench.data.survey_file import SurveyFile
    from socbench.errors import DataError

    def broken(self, names, chunk_rows=10):  # the file turns unreadable halfway through the rows
        yield pd.DataFrame({name: [1.0] * 3 for name in names})
        raise DataError(f"{self.path}: cannot read the SPSS file (truncated)")

    monkeypatch.setattr(SurveyFile, "chunks", broken)
    code, err, _ = _import(capsys, _sav(tmp_path / "ok.sav"), out, "--questions", "V5", "--sizes", "5,10")
    assert code == 2 and "truncated" in err[0]
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("target", ["file", "folder"])
def test_a_link_out_of_the_data_folder_is_an_error(tmp_path: Path, capsys, target: str) -> None:
    out = tmp_path / "out"
    assert _import(capsys, _sav(tmp_path / "s.sav"), out, "--questions", "V5", "--sizes", "10")[0] == 0
    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / "A_GroundTruth_sampling10", elsewhere)
    if target == "file":
        (out / "A_GroundTruth_sampling10").mkdir()
        (out / "A_GroundTruth_sampling10" / "issp_answer_s.json").symlink_to(elsewhere / "issp_answer_s.json")
    else:
        (out / "A_GroundTruth_sampling10").symlink_to(elsewhere, target_is_directory=True)
    code, err = _validate(capsys, out, "--dataset_size", "10")
    assert code == 2 and len(err) == 1, err
    assert "A_GroundTruth_sampling10/issp_answer_s.json: a link out of the data folder" in err[0]
    assert str(elsewhere / "issp_answer_s.json") in err[0]
    if target == "folder":  # an import never writes through it either
        before = _files(elsewhere)
        code, err, _ = _import(capsys, _sav(tmp_path / "t.sav"), out, "--questions", "V5", "--sizes", "10")
        assert code == 2 and len(err) == 1, err
        assert "A_GroundTruth_sampling10: a link out of the data folder" in err[0]
        assert _files(elsewhere) == before


# ------------------------------------------------------------------------ weights


@pytest.mark.parametrize("kind", ["sav", "csv"])
def test_bad_weights_are_one_line_naming_count_and_rows(tmp_path: Path, capsys, kind: str) -> None:
    source = _sav(tmp_path / "w.sav", weights=BAD_ROWS)
    extra: tuple[str, ...] = ()
    if kind == "csv":  # a blank cell where the weight should be
        frame, _ = pyreadstat.read_sav(source)
        frame["WEIGHT"] = frame["WEIGHT"].astype(object)
        frame.loc[11, "WEIGHT"] = ""
        frame.to_csv(tmp_path / "w.csv", index=False)
        (tmp_path / "book.csv").write_text("variable,label,code,value_label\nV5,Question five,1,Yes\n"
                                           "V5,,2,No\nV5,,3,Maybe\nC_ALPHAN,Country,,\nWEIGHT,Weight,,\n")
        source, extra = tmp_path / "w.csv", ("--codebook", str(tmp_path / "book.csv"))
    out = tmp_path / "out"
    code, err, _ = _import(capsys, source, out, "--questions", "V5", *extra)
    assert code == 2 and len(err) == 1, err
    counts = "4 of 60 respondents have no usable weight (missing 2," if kind == "csv" else \
        "3 of 60 respondents have no usable weight (missing 1,"
    rows = "first rows 3, 6, 10, 12" if kind == "csv" else "first rows 3, 6, 10 "
    expected = f"{counts} negative 1, zero 1), {rows}"
    assert f"weight variable WEIGHT: {expected}" in err[0] and "--bad-weights drop" in err[0]
    assert not out.exists()


def test_bad_weights_drop_and_unweighted_are_counted(tmp_path: Path, capsys) -> None:
    source = _sav(tmp_path / "w.sav", weights=BAD_ROWS)
    code, err, printed = _import(capsys, source, tmp_path / "drop", "--questions", "V5", "--sizes", "100",
                                 "--bad-weights", "drop")
    assert code == 0, err
    note = ("3 of 60 respondents have no usable weight (missing 1, negative 1, zero 1): "
            "left out (--bad-weights drop)")
    assert f"weights: {note}" in printed
    folder = tmp_path / "drop" / "A_GroundTruth_sampling100"
    records = json.loads((folder / "issp_answer_w.json").read_text())
    assert len(records) == 57 and all(r["weight"] > 0 for r in records)
    assert not {10**7 + row + 1 for row in BAD_ROWS} & {r["person_id"] for r in records}
    assert json.loads((folder / "sampling_stats_w.json").read_text())["weights"] == note

    code, err, printed = _import(capsys, source, tmp_path / "none", "--questions", "V5", "--sizes", "100",
                                 "--bad-weights", "unweighted")
    assert code == 0, err
    assert "weights: WEIGHT not written, weighted metrics off: 3 of 60 respondents" in printed
    records = json.loads((tmp_path / "none" / "A_GroundTruth_sampling100" / "issp_answer_w.json").read_text())
    assert len(records) == 60 and not any("weight" in r or "WEIGHT" in r["attributes"] for r in records)


def test_validate_reports_unusable_weights_in_existing_data(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert _import(capsys, _sav(tmp_path / "w.sav"), out, "--questions", "V5", "--sizes", "20")[0] == 0
    path = out / "A_GroundTruth_sampling20" / "issp_answer_w.json"
    records = json.loads(path.read_text())
    records[3]["weight"], records[7]["weight"] = None, -2.0
    path.write_text(json.dumps(records))
    code, err = _validate(capsys, out, "--dataset_size", "20")
    assert code == 2 and len(err) == 1, err
    assert (f"{path}: 2 of 20 respondents have no usable design weight (missing 1, negative 1; "
            f"first person_id {records[3]['person_id']}, {records[7]['person_id']}): "
            "weighted metrics will be off") in err[0]


def test_the_summary_and_the_report_say_why_weighted_metrics_are_off(tmp_path: Path, capsys) -> None:
    """A tiny scoring path (every respondent answers option 1) over two imported domains: one
    imported without weights by choice, one whose answer file holds a negative weight."""
    data_dir = tmp_path / "Dataset_all"
    source = _sav(tmp_path / "w.sav", weights=BAD_ROWS)
    for slug, choice in (("plain", "unweighted"), ("mixed", "drop")):
        assert _import(capsys, source, data_dir, "--questions", "V5", "--slug", slug, "--sizes", "30",
                       "--bad-weights", choice)[0] == 0
    path = data_dir / "A_GroundTruth_sampling30" / "issp_answer_mixed.json"
    records = json.loads(path.read_text())
    records[0]["weight"] = -1.0
    path.write_text(json.dumps(records))
    results = []
    for slug in ("plain", "mixed"):
        data = load_domain(data_dir, get_domain(slug, data_dir), 30)
        items = build_items(data)
        scored = score_domain(data, items, {i.item_id: Extraction("1") for i in items}, model="m")
        write_scored_domain(tmp_path / "results", scored)
        results.append(scored.result)
    plain, mixed = results
    assert plain.weights_off == "the data has no design weights"
    assert mixed.weights_off == ("1 of 30 respondents have no usable design weight (negative 1; "
                                 f"first person_id {records[0]['person_id']})")
    assert not any(name.endswith("_weighted") for r in results for name in r.baselines)
    summary = write_run_summary(tmp_path / "results", "m", results)
    rows = {row["domain"]: row for row in json.loads(summary.path.read_text())["domains"]}
    assert rows["Plain"]["weighted_metrics_off"] == plain.weights_off
    assert rows["Mixed"]["weighted_metrics_off"] == mixed.weights_off
    text = summary.markdown.read_text()
    assert f"are off: {plain.weights_off}: Plain; {mixed.weights_off}: Mixed." in text
    assert f"- weighted metrics: off ({mixed.weights_off})" in domain_markdown(mixed)
    metrics = json.loads((tmp_path / "results" / "m" / "Mixed_metrics.json").read_text())
    assert metrics["weighted_metrics_off"] == mixed.weights_off
    html = write_report(tmp_path / "results", n_resamples=50).html.read_text()
    assert "weighted metrics off: " in html and "no usable design weight (negative 1" in html
