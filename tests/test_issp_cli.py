"""`socbench issp` end to end against an OpenAI-compatible server (the project's test server).

The run goes through the real Prefect flow in-process; its result files are checked
against numbers recomputed here from `details` alone. A second run sends no request.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from sklearn.metrics import f1_score

from socbench.domains import DOMAINS
from support import CLI
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed

SEED_KEYS = {"domain", "timestamp", "model", "correct_count", "total_count", "accuracy", "macro_f1",
             "micro_f1", "parse_failures", "excluded_count", "details"}
DETAIL_KEYS = {"person_id", "question_id", "country_code", "true_answer", "llm_answer", "correct",
               "is_country_specific", "parse_error"}
METRIC_KEYS = {"domain", "domain_id", "model", "timestamp", "accuracy", "macro_f1", "micro_f1",
               "interview_count", "total_count", "correct_count", "parse_failures", "excluded_count"}



def _independent(details: list[dict]) -> dict:
    """Accuracy and the seed's pooled F1s, recomputed from the details alone."""
    y_true = [d["true_answer"] for d in details]
    y_pred = [d["llm_answer"] if d["llm_answer"] is not None and d["parse_error"] is None else "invalid"
              for d in details]
    correct = sum(1 for d in details if d["true_answer"] == d["llm_answer"] and d["parse_error"] is None)
    return {"correct_count": correct, "total_count": len(details), "accuracy": correct / len(details),
            "macro_f1": f1_score(y_true, y_pred, labels=sorted(set(y_true)), average="macro",
                                 zero_division=0),
            "micro_f1": f1_score(y_true, y_pred, average="micro")}


@pytest.mark.slow  # runs flows on the session's Prefect API
def test_issp_against_openai_server(api_url: str, tmp_path: Path, demo_data: Path) -> None:
    out = tmp_path / "results"
    with FakeOpenAIServer(faults={"500": 0.1, "429": 0.05, "null": 0.05}) as server:
        args = ["issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                "--data_dir", str(demo_data), "--domain_id", "all", "--interview_count", "8",
                "--output_dir", str(out), "--concurrent_requests", "16"]
        socbench(*args)
        sent = server.stats().requests
        assert sent > 0
        socbench(*args)
        assert server.stats().requests == sent  # everything from the cache: not even the preflight's probe

    model_dir = out / "fake-model"
    for domain in DOMAINS:
        detailed = read_detailed(model_dir / f"{domain.name}_detailed.json")
        metrics = json.loads((model_dir / f"{domain.name}_metrics.json").read_text())
        assert SEED_KEYS <= detailed.keys() and METRIC_KEYS <= metrics.keys()
        assert all(DETAIL_KEYS <= d.keys() for d in detailed["details"])
        expected = _independent(detailed["details"])
        for key, value in expected.items():
            assert detailed[key] == pytest.approx(value), (domain.name, key)
            assert metrics[key] == pytest.approx(value), (domain.name, key)
        assert metrics["domain_id"] == domain.id and metrics["interview_count"] == 8
        per_person = defaultdict(int)
        for d in detailed["details"]:
            per_person[d["person_id"]] += 1
        assert len(per_person) == 8
    summary = json.loads((model_dir / "summary.json").read_text())
    assert len(summary["domains"]) == 10
    assert "mean" in (model_dir / "summary.md").read_text().lower()


BAD_INPUT = [
    (["--data_dir", "/nonexistent/dir"], "--data_dir /nonexistent/dir"),
    (["--domain_id", "5"], "--domain_id 5"),
    (["--domain_id", "42"], "--domain_id '42'"),
    (["--interview_count", "many"], "--interview_count"),
    (["--dataset_size", "5000"], "A_GroundTruth_sampling5000"),
    (["--model", "no-such-model"], "no-such-model"),
    (["--api_type", "config", "--api_base", "not a url", "--model", "m"], "--api_base"),
    (["--api_type", "config", "--api_base", "http://127.0.0.1:9", "--model", "m"], "--api_base http://127.0.0.1:9"),
    (["--output_dir", "/proc/socbench-cannot-write"], "--output_dir"),
]


def _issp_argv(args: list[str]) -> list[str]:
    return ["issp", *(args if "--domain_id" in args else ["--domain_id", "1", *args])]


def one_line(code: int, stderr: str, needle: str) -> None:
    """Exit 2 and one line on stderr naming what is wrong, no traceback."""
    assert code == 2, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("args, needle", BAD_INPUT)
def test_bad_input_is_one_line(args: list[str], needle: str, cli_in_process, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code = cli_in_process(_issp_argv(args))
    one_line(code, capsys.readouterr().err, needle)


@pytest.mark.slow  # runs the CLI in a subprocess
def test_bad_input_is_one_line_from_the_command() -> None:
    """The promise as a user meets it, once for every case above: a real process, its exit code."""
    args, needle = BAD_INPUT[0]
    result = subprocess.run([*CLI, *_issp_argv(args)], capture_output=True, text=True, timeout=600)
    one_line(result.returncode, result.stderr, needle)
