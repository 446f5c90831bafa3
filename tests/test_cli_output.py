"""What ``socbench issp`` says, run as a user would (in-process vLLM, no Prefect server given).

Issue 12, seen 6: the CLI printed only ``summary: <path>``, plus a Prefect telemetry ERROR line
on an offline machine and vLLM's WARNING lines on stdout. Now stderr has one line per domain
(accuracy [CI], strongest baseline and margin, parse failures, engine errors, seconds; a bar
as well on a terminal), and stdout holds socbench's own output only — the table and the paths
of the summary and the HTML report — so it can be piped. Nothing is left running afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from socbench.report.labels import baseline_label
from support import CLI
from support.processes import processes_with_env, user_prefect_home
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
LINE = re.compile(r"^domain (\d+) (\w+): (\d+) items, "
                  r"accuracy (\d\.\d{3}) \[(?:\d\.\d{3}, \d\.\d{3}|no CI: n < 10)\], "
                  r"best baseline (?:majority answer|majority in country|uniform guess|demographic model) "
                  r"\d\.\d{3} \([+-]\d\.\d{3}\), "
                  r"0 parse failures, 0 engine errors, \d+\.\d s$")
OFFLINE_DEFAULTS = ("PREFECT_SERVER_ANALYTICS_ENABLED", "DO_NOT_TRACK")


def test_per_domain_lines_on_stderr_and_only_the_table_and_paths_on_stdout(tiny_model, demo_data, prefect_db,
                                                                           tmp_path):
    home, out = tmp_path / "prefect", tmp_path / "out"
    # as on a user's offline machine: no API URL, analytics not switched off by the environment
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_API_") and k not in OFFLINE_DEFAULTS}
    env.update(user_prefect_home(home, prefect_db))
    run = subprocess.run([*CLI, "issp", "--model", str(tiny_model), "--engine",
                          '{"dtype": "float32"}', "--data_dir", str(demo_data), "--domain_id", "all",
                          "--start_domain_id", "10", "--interview_count", "5", "--output_dir", str(out)],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]

    lines = [LINE.match(line) for line in run.stderr.splitlines() if line.startswith("domain ")]
    assert all(lines), run.stderr[-3000:]
    assert [(m[1], m[2]) for m in lines] == [("10", "SocialNetworks"), ("11", "WorkOrientations")]
    assert "telemetry" not in run.stderr.lower() and " ERROR " not in run.stderr
    assert "Traceback" not in run.stderr

    summary_path = next(out.glob("*/summary.json"))
    rows = json.loads(summary_path.read_text())["domains"]
    stdout = run.stdout.splitlines()
    head, rule, *rest, summary, report = stdout  # nothing else: no vLLM, no Prefect
    table, notes = rest[:len(rows)], rest[len(rows):]  # 5 respondents a domain: one note of what it lacks
    assert len(notes) == 1 and "--interview_count" in notes[0] and not notes[0].startswith("|"), notes
    assert [cell.strip() for cell in head.strip("|").split("|")] == [
        "domain", "accuracy [95% CI]", "strongest baseline", "margin", "failures"]
    assert set(rule) == {"|", "-"} and len(table) == len(rows) == 2
    assert all(len(line) <= 120 for line in [head, rule, *table])  # fits a terminal (issue 22)
    for line, row, match in zip(table, rows, lines):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[0] == f"{row['domain_id']} {row['domain']}"
        assert cells[1].startswith(f"{row['accuracy']:.3f} [")
        best = baseline_label(row["best_baseline"], short=True)  # in words: "majority answer"
        assert cells[2:] == [f"{row['best_baseline_accuracy']:.3f} {best}",
                             f"{row['margin_over_best_baseline']:+.3f}", "0 parse, 0 engine"]
        assert match[3] == str(row["scoreable_items"]) and match[4] == f"{row['accuracy']:.3f}"
    assert summary == f"summary: {summary_path}"
    html = out / "report" / "report.html"
    assert report == f"report: {html}" and html.is_file()
    assert processes_with_env("PREFECT_HOME", str(home)) == []  # socbench's Prefect API stopped with it


def test_the_command_keeps_its_exit_code_and_output_without_the_interpreter_teardown(tmp_path):
    """``socbench.cli.command`` ends the process from the last atexit handler (seconds saved per run):
    stdout still flushed into a pipe, the exit code still main's."""
    ok = subprocess.run([*CLI, "--help"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and ok.stdout.startswith("usage: socbench") and ok.stdout.endswith("\n")
    bad = subprocess.run([*CLI, "report", str(tmp_path / "none")], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "results folder not found" in bad.stderr
    flag = subprocess.run([*CLI, "issp", "--no_such_flag"], capture_output=True, text=True, cwd=ROOT)
    assert flag.returncode == 2 and "--no_such_flag" in flag.stderr
