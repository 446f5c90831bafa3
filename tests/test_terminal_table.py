"""The run's table on a terminal fits 120 columns (issue 22: `make demo` printed summary.md's
20 columns, 300 characters wide). Ten domains with long names (an own survey's), the longest
baseline name, an incomplete domain and one too small for a CI: every line ≤ 120 characters,
the five columns there, the numbers as the per-domain line prints them."""

from __future__ import annotations

import math

from socbench.mcq.scoring import COLUMNS
from socbench.progress import domain_line, finished_line, run_table
from socbench.report.mcq import table_markdown
from socbench.report.terminal import terminal_table

NAMES = ["Citizenship and Political Participation in Europe", "Environment and Climate Change Attitudes",
         "Family and Changing Gender Roles", "Health and Health Care Systems in Comparison", "Leisure Time",
         "National Identity and Attitudes towards Immigration", "Religion and Religiosity",
         "Role of Government", "Social Inequality and Perceived Fairness of Incomes",
         "Work Orientations"]


def row(i: int, name: str) -> dict:
    """A ``summary_row`` as ``summary.json`` holds it (NaN where a value is missing)."""
    accuracy = 0.3 + i / 50
    return {"domain_id": i + 1, "domain": name, "accuracy": accuracy, "accuracy_ci_low": accuracy - 0.06,
            "accuracy_ci_high": accuracy + 0.06, "best_baseline": "majority_country_question_weighted",
            "best_baseline_accuracy": 0.38, "margin_over_best_baseline": accuracy - 0.38,
            "scoreable_items": 1450 + i, "parse_failures": 12 * i, "engine_errors": 0, "complete": True,
            "incomplete_reason": None}


def ten_domains() -> list[dict]:
    rows = [row(i, name) for i, name in enumerate(NAMES)]
    rows[4].update(accuracy_ci_low=math.nan, accuracy_ci_high=math.nan)  # fewer respondents than a CI needs
    rows[7].update(complete=False, engine_errors=37, incomplete_reason="37 engine errors, first: HTTP 503")
    return rows


def test_the_run_table_fits_120_columns_with_its_five_columns() -> None:
    rows = ten_domains()
    lines = run_table(rows)
    assert all(len(line) <= 120 for line in lines), "\n".join(f"{len(line)}: {line}" for line in lines)
    head, rule, *body = lines
    assert [cell.strip() for cell in head.strip("|").split("|")] == [
        "domain", "accuracy [95% CI]", "strongest baseline", "margin", "failures"]
    assert set(rule) == {"|", "-"} and len(rule) == len(head) and len(body) == 10
    assert all(len(line) == len(head) for line in body)  # aligned
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in body]
    assert cells[0][0].startswith("1 Citizenship") and cells[0][0].endswith("…")  # cut, not wrapped
    assert cells[6][0] == "7 Religion and Religiosity"  # short enough: whole
    assert cells[1][1] == "0.320 [0.260, 0.380]" and cells[1][2].startswith("0.380 majority in country")
    assert cells[1][3:] == ["-0.060", "12 parse, 0 engine"]
    assert cells[4][1] == "0.380 [no CI: n < 10]"
    assert cells[7][1:4:2] == ["incomplete", "n/a"] and cells[7][4] == "84 parse, 37 engine"
    assert len(" ".join(lines)) < 1500  # no wide summary.md columns came along


def test_a_cell_too_long_for_any_width_is_cut_and_a_narrow_table_stays_whole() -> None:
    wide = terminal_table(("name", "value"), [("x" * 300, "1")], width=40)
    assert max(map(len, wide)) <= 40 and wide[2].startswith("| xxx") and "…" in wide[2]
    narrow = terminal_table(("a", "b"), [("1", "2")])
    assert narrow == ["| a | b |", "|---|---|", "| 1 | 2 |"]


def test_the_domain_line_is_the_same_for_the_cli_and_the_demo() -> None:
    line = finished_line(domain_line(row(2, "Family")), 12.34)
    assert line == ("domain 3 Family: 1452 items, accuracy 0.340 [0.280, 0.400], best baseline majority "
                    "in country (weighted) 0.380 (-0.040), 24 parse failures, 0 engine errors, 12.3 s")


def test_the_mcq_table_fits_120_columns() -> None:
    rows = [{"k-shot": k, **{c: 0.25 + k / 100 for c in COLUMNS.values()}} for k in (0, 1, 5, 25)]
    text = table_markdown(rows, "CP vs MCP: ARC-Challenge")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 6 and all(len(line) <= 120 for line in table)
