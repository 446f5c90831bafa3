"""CP vs MCP runs in the report, beside ISSP runs: each dataset's table (k-shot x method, chance,
"incomplete" where MCP's requests went unanswered) and its circular metrics, read from the run's
``<dataset>_results.json``; a folder of MCQ runs alone is a report too; and report.html read in chromium
over a folder holding an ISSP run and an MCQ run shows both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from socbench.cli import main
from socbench.report.html import write_report
from support.browser import browser, needs_browser
from tests.test_mcq_circular import Q3, Q4, Q5, RuleEngine, run_pipeline
from tests.test_report_html import A, make_run


def mcq_run(out: Path, fail_on: str | None = None) -> dict:
    """Three items, CP and MCP at 0 and 1 shots, MCP in circular orders (an engine error on ``fail_on``)."""
    return run_pipeline(RuleEngine("longest", fail_on), out, items=(Q3, Q5, Q4), methods=("cp", "mcp"),
                        k_shots=(0, 1))


def section(page: str) -> str:
    return page.split("id='mcq'", 1)[1]


def test_a_folder_of_mcq_runs_alone_is_a_report(tmp_path: Path, capsys) -> None:
    run = mcq_run(tmp_path)
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "site")]) == 0
    assert "report: " in capsys.readouterr().out
    text = section((tmp_path / "site" / "report.html").read_text())
    accuracy, results = run["results"]["accuracy"], run["results"]
    for k in ("0", "1"):
        cells = [f"{accuracy[k][c]:.4f}" for c in ("CP-RAW", "CP-UN", "CP-LN", "CP-LN-char", "MCP")]
        assert f"<td>{k}</td>" + "".join(f"<td>{c}</td>" for c in cells) in text
    assert f"chance {results['chance_accuracy']:.4f}" in text
    circular = results["circular"]["k"]["0"]["metrics"]
    assert "Circular evaluation of MCP (circular)" in text and "perf_circular" in text
    assert f"{circular['perf_circular']:.3f}" in text and "more_1_circular" in text


def test_an_incomplete_mcq_run_shows_no_mcp_number(tmp_path: Path) -> None:
    run = mcq_run(tmp_path, fail_on="v")  # q5's first option: its MCP requests fail
    assert run["results"]["complete"] is False
    text = section(write_report(tmp_path).html.read_text())
    assert "<td class='txt'>incomplete</td>" in text and "Incomplete run: not a result." in text
    assert "Circular evaluation of MCP" not in text  # an incomplete run has no circular scores


@needs_browser
@pytest.mark.slow  # drives chromium
def test_issp_and_mcq_runs_side_by_side_in_a_browser(tmp_path: Path, memo_cache: Path) -> None:
    make_run(tmp_path, A, 0.6, seed=1, cache=memo_cache)
    results = mcq_run(tmp_path)["results"]
    page = write_report(tmp_path, tmp_path / "site").html
    with browser(tmp_path / "chromium") as chromium:
        chromium.open(page.as_uri(), "7. Multiple choice: CP vs MCP", "By domain")
        chromium.driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true);")
        text = chromium.driver.find_element("tag name", "body").text
    issp, _, mcq = text.partition("7. Multiple choice: CP vs MCP")
    summary = json.loads((tmp_path / "org_Model-1.7B" / "summary.json").read_text())
    assert "org_Model-1.7B" in issp and f"{summary['pooled']['line']['accuracy']:.3f}" in issp
    assert f"tiny (test, 3 items): {results['model']}" in mcq
    assert f"{results['accuracy']['1']['MCP']:.4f}" in mcq and "vote_circular" in mcq
