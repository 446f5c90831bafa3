"""Runs with engine errors in the report: listed apart with their counts, never ranked or compared.

Issue 12, seen 2: accuracy 0.0 / 0.017 of runs whose requests failed was written to the
leaderboard and the HTML report as if it were a result.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from socbench.cli import main
from socbench.report.html import write_report
from socbench.report.leaderboard import leaderboard
from support.browser import browser, needs_browser
from support.records import read_detailed, write_detailed
from tests.test_report_html import A, B, make_run

BROKEN = "org/Model-360M"


def break_run(out: Path, model: str, reason: str, cache: Path) -> None:
    """Rewrite one domain of a run as the engine left it: the first 40 items never answered."""
    make_run(out, model, 0.9, seed=3, cache=cache)
    path = out / model.replace("/", "_") / "Family_detailed.json"
    payload = read_detailed(path)
    for detail in payload["details"][:40]:
        detail.update(llm_answer=None, correct=False, parse_error=None, engine_error=reason, raw_reply=None)
    payload.update(complete=False, engine_errors=40, engine_error_reasons={reason: 40}, accuracy=None)
    write_detailed(path, payload)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, memo_cache: Path) -> Path:
    out = tmp_path_factory.mktemp("results")
    make_run(out, A, 0.6, seed=1, cache=memo_cache)
    make_run(out, B, 0.3, seed=2, cache=memo_cache)
    break_run(out, BROKEN, "gave up after 7 attempts: connection error (refused)", memo_cache)
    return out


def test_incomplete_run_is_listed_apart_and_never_ranked(results: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", str(results), "--out", str(tmp_path / "site")]) == 0
    printed = capsys.readouterr().out
    assert "incomplete run org_Model-360M (not ranked): 40 engine error(s) in Family (40)" in printed
    board = leaderboard(results)
    assert [row["run"] for row in board.overall] == ["org_Model-1.7B", "org_Model-135M"]
    assert {row["run"] for row in board.domains} == {"org_Model-1.7B", "org_Model-135M"}
    assert all("org_Model-360M" not in pair[:2] for pair in board.comparisons)
    [row] = board.incomplete
    assert (row["run"], row["engine_errors"], row["incomplete_domains"], row["items"]) == (
        "org_Model-360M", 40, "Family (40)", 180)
    markdown = (tmp_path / "site" / "leaderboard.md").read_text()
    ranked, _, rest = markdown.partition("## Incomplete runs (not ranked)")
    assert "org_Model-360M" not in ranked and "| org_Model-360M | org/Model-360M | 2 | Family (40) |" in rest
    with (tmp_path / "site" / "leaderboard.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["run"] == "org_Model-360M"]
    assert len(rows) == 1 and rows[0]["complete"] == "False" and rows[0]["accuracy"] == ""
    assert rows[0]["engine_errors"] == "40"


@needs_browser
@pytest.mark.slow  # drives chromium
def test_html_report_shows_the_incomplete_run_in_a_browser(results: Path, tmp_path: Path) -> None:
    page = write_report(results, tmp_path / "site").html
    with browser(tmp_path / "chromium") as chromium:
        chromium.open(page.as_uri(), "Incomplete runs (not ranked)", "By domain")
        dom = chromium.html()
    ranked, _, incomplete = dom.partition("Incomplete runs (not ranked)")
    incomplete, _, rest = incomplete.partition("By domain")
    assert "1. Is the model better than answer-free baselines?" in ranked and "org_Model-360M" not in ranked
    assert ">org_Model-360M</td>" in incomplete and ">Family (40)</td>" in incomplete
    assert "org_Model-360M" not in rest  # no score of it anywhere else on the page


def test_compare_refuses_an_incomplete_run(results: Path, capsys) -> None:
    assert main(["report", str(results), "--compare", "org_Model-1.7B", "org_Model-360M"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--compare org_Model-360M: the run is incomplete (40 engine error(s)" in err[0]
