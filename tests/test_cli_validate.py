"""``socbench data validate`` in-process and as the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.data_layer.issp_dataset import FAMILY_EXPECTED, NATID_EXPECTED, write_dataset
from socbench.cli import main
from support.cli import socbench

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".venv" / "bin" / "socbench"


def run_cli(*args: str) -> tuple[int, str, str]:
    done = socbench("data", "validate", *args, code=None)
    return done.returncode, done.stdout, done.stderr


def test_json_report_matches_hand_tally(tmp_path):
    root = write_dataset(tmp_path)
    for domain, expected in (("3", FAMILY_EXPECTED), ("6", NATID_EXPECTED)):
        code, out, err = run_cli("--data-dir", str(root), "--domain_id", domain, "--json")
        assert (code, err) == (0, "")
        assert json.loads(out) == {"domains": {domain: expected}}


def test_table_report(tmp_path):
    write_dataset(tmp_path)
    code, out, _ = run_cli("--data_dir", str(tmp_path), "--domain-id", "3", "--dataset-size", "500")
    assert code == 0
    header, row = out.splitlines()[1:3]
    assert header.split() == ["id", "domain", "respondents", "questions", "countries", "scoreable_items",
                              "excluded_items", "unmapped"]
    assert row.split() == ["3", "Family", "8", "3", "6", "17", "7", "2"]
    assert "Family: excluded, system-missing (no answer recorded): 3" in out
    assert "Family: country not mapped: 'Narnia' (2 respondents)" in out


def test_partial_dataset_reports_every_domain(tmp_path):
    root = write_dataset(tmp_path)
    missing = root / "A_GroundTruth_sampling500" / "issp_answer_nationalidentity.json"
    missing.unlink()
    code, out, err = run_cli("--data-dir", str(root), "--json")
    assert code == 2
    report = json.loads(out)
    assert report["domains"] == {"3": FAMILY_EXPECTED}
    assert set(report["errors"]) == {"1", "2", "4", "6", "7", "8", "9", "10", "11"}
    lines = err.splitlines()
    assert len(lines) == 9 and all(line.startswith("socbench: error: domain ") for line in lines)
    assert any(str(missing) in line and line.startswith("socbench: error: domain 6:") for line in lines)


def test_malformed_domain_does_not_stop_the_others(tmp_path):
    root = write_dataset(tmp_path)
    bad = root / "q&a" / "issp_qa_family.json"
    bad.write_text('[{"question_id": "V5",, }]', encoding="utf-8")
    code, out, err = run_cli("--data-dir", str(root), "--domain_id", "all", "--json")
    assert code == 2 and "6" in json.loads(out)["domains"]
    assert f"socbench: error: domain 3: {bad}:1:23: malformed JSON" in err


@pytest.mark.parametrize("args, needle", [
    (["--dataset_size", "1000"], "A_GroundTruth_sampling1000"),
    (["--domain_id", "5"], "--domain_id 5"),
    (["--domain_id", "42"], "--domain_id '42'"),
])
def test_setting_errors_are_one_line(tmp_path, args, needle):
    root = write_dataset(tmp_path)
    code, out, err = run_cli("--data-dir", str(root), *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and needle in err


def test_missing_data_dir(tmp_path):
    code, _, err = run_cli("--data-dir", str(tmp_path / "absent"))
    assert code == 2 and err.count("\n") == 1 and "absent: folder not found" in err


@pytest.mark.slow  # runs the console script
def test_console_script(tmp_path):
    root = write_dataset(tmp_path)
    env = {**os.environ, "PYTHONPATH": ""}
    ok = subprocess.run([str(SCRIPT), "data", "validate", "--data-dir", str(root), "--domain-id",
                         "6", "--json"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"domains": {"6": NATID_EXPECTED}}
    bad = subprocess.run([str(SCRIPT), "data", "validate", "--data-dir", str(root), "--dataset-size", "5000"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "A_GroundTruth_sampling5000" in bad.stderr and "sizes present: 500" in bad.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="posix paths")
def test_help_lists_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["data", "validate", "--help"])
    out = capsys.readouterr().out
    for name in ("--data_dir", "--data-dir", "--dataset_size", "--dataset-size", "--domain_id", "--json"):
        assert name in out
