"""Issue 30, item 7: a rerun with nothing new reads what the last run computed, and only then.

The marker a completed run leaves (``socbench.log.rerun``) answers the same command; a changed data file,
flag, model or server, an incomplete run, a missing file of the run or any new write to its results log
means a real run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from socbench.config import make_config
from socbench.log.rerun import fingerprint, marker, recall, remember
from socbench.log.summary import write_summary_json
from socbench.outcomes import Outcome
from support.fake_openai import FakeOpenAIServer

URL = "http://127.0.0.1:9/v1"


def settings(data: Path, out: Path, **more) -> dict:
    return {"data_dir": str(data), "output_dir": str(out), "api_type": "openai", "api_base": URL,
            "model": "fake-model", "domain_id": 1, "interview_count": 2, **more}


@pytest.fixture()
def done(tmp_path: Path, demo_data: Path) -> dict:
    """A completed run's marker over a copy of the demo data."""
    data = tmp_path / "data"
    shutil.copytree(demo_data, data)
    flags = settings(data, tmp_path / "out")
    config = make_config(**flags)
    folder = marker(config).parent
    folder.mkdir(parents=True)
    paths = {"summary": str(folder / "summary.json"), "report": str(tmp_path / "out" / "report.html")}
    for path in paths.values():
        Path(path).write_text("{}")
    remember(config, fingerprint(config), Outcome("the table", paths, completed=[1]))
    return flags


def test_the_same_run_is_read_from_its_marker(done: dict) -> None:
    last = recall(make_config(**done))
    assert last is not None and last.ok
    assert (last.printed, last.completed, set(last.paths)) == ("the table", [1], {"summary", "report"})


@pytest.mark.parametrize("change", [{"seed": 7}, {"interview_count": 3}, {"domain_id": 2},
                                    {"temperature": 0.5}, {"api_base": "http://127.0.0.1:10/v1"},
                                    {"mode": "logprobs"}, {"model": "other-model"}, {"no_persona": True}])
def test_any_other_setting_runs(done: dict, change: dict) -> None:
    assert recall(make_config(**{**done, **change})) is None


def test_a_changed_data_file_runs(done: dict) -> None:
    answers = next(Path(done["data_dir"]).rglob("*answer*"))
    answers.write_bytes(answers.read_bytes() + b" ")
    assert recall(make_config(**done)) is None


def test_a_missing_file_of_the_run_runs(done: dict) -> None:
    Path(done["output_dir"], "report.html").unlink()
    assert recall(make_config(**done)) is None


def test_a_new_write_to_the_results_log_drops_the_marker(done: dict) -> None:
    config = make_config(**done)
    write_summary_json(marker(config).parent, [], model="fake-model")
    assert not marker(config).exists() and recall(config) is None


def test_an_incomplete_or_failed_run_leaves_no_marker(done: dict) -> None:
    config = make_config(**done)
    marker(config).unlink()
    for outcome in (Outcome("t", {}, incomplete={1: "domain 1: 3 engine errors"}),
                    Outcome("t", {}, failed={1: "x"}), Outcome("t", {}, export_failed=["sav: no"])):
        remember(config, fingerprint(config), outcome)
        assert not marker(config).exists()


@pytest.mark.slow  # runs flows on the session's Prefect API
def test_the_cli_answers_a_rerun_from_the_log_and_runs_again_after_a_change(
        api_url, cli_in_process, capsys, tmp_path: Path, demo_data: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    shutil.copytree(demo_data, data)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as server:
        args = ["issp", "--api_type", "openai", "--api_base", server.url, "--model", "fake-model",
                "--data_dir", str(data), "--domain_id", "1", "--interview_count", "2",
                "--output_dir", str(tmp_path / "out")]
        assert cli_in_process(args) == 0
        first = capsys.readouterr()
        sent = server.stats().requests
        assert cli_in_process(args) == 0
        again = capsys.readouterr()
        assert again.out == first.out and server.stats().requests == sent
        assert "results were read from the last run" in again.err
        answers = next(data.rglob("*answer*"))
        answers.write_bytes(answers.read_bytes() + b" ")
        assert cli_in_process(args) == 0
        changed = capsys.readouterr()
        assert server.stats().requests == sent  # the prompts did not change: every answer from the cache
    assert "results were read from the last run" not in changed.err
    assert "domain 1 Citizenship: " in changed.err  # a real run: its domain was scored again


def test_a_model_socbench_cannot_fingerprint_leaves_no_marker(tmp_path: Path, demo_data: Path) -> None:
    """An engine only a test registers (no model folder): the run goes on, nothing is remembered."""
    config = make_config(**settings(demo_data, tmp_path, api_type="hf", model="no-such-model"))
    assert fingerprint(config) is None
