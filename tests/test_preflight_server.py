"""What the server says before a run starts: `/v1/models` must list `--model`, and `--structured`
must be accepted and honoured. Each problem is one line naming the flag, exit 2, before any work.

Issue 12, seen 7 (last part): the reachability check ignored what `/v1/models` answered, so a
misspelled `--model` ran to the end, every request a 404, and was published as a score.
Seen 4: a server that cannot constrain output (OpenAI's API has no `structured_outputs`)
failed every request instead of saying so once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from socbench.config import make_config
from socbench.errors import ConfigError
from socbench.preflight import check_run, check_server
from support.fake_openai import FakeOpenAIServer


def issp(url: str, demo_data: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["issp", "--api_type", "config", "--api_base", url, "--data_dir", str(demo_data),
            "--domain_id", "1", "--interview_count", "2", "--output_dir", str(tmp_path / "out"), *extra]


@pytest.fixture()
def one_line(cli_in_process, monkeypatch, capsys):
    """Run ``socbench`` in this process (the subprocess promise is tests/test_issp_cli.py's): its one
    error line, after checking exit 2, one line, no traceback."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def run(argv: list[str]) -> str:
        code = cli_in_process(argv)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[-2000:]
        return lines[0]

    return run


def test_misspelled_model_is_one_line_listing_what_is_served(demo_data: Path, tmp_path: Path,
                                                              one_line) -> None:
    with FakeOpenAIServer(model="smollm2-135m") as server:
        line = one_line(issp(server.url + "/v1", demo_data, tmp_path, "--model", "smollm2-135"))
        assert server.stats().requests == 0  # nothing was asked
    assert "--model 'smollm2-135'" in line and "does not serve it; it serves: smollm2-135m" in line
    assert not (tmp_path / "out" / "smollm2-135").exists()  # no score, no result folder


def test_check_server_accepts_the_served_model_with_or_without_v1(tmp_path: Path) -> None:
    with FakeOpenAIServer(model="m") as server:
        check_server(server.url, "m")
        check_server(f"{server.url}/v1/", "m")
        with pytest.raises(ConfigError, match="--model 'n'.*it serves: m"):
            check_server(f"{server.url},{server.url}/v1", "n")


def test_server_rejecting_structured_output_is_one_line_naming_the_flag(demo_data, tmp_path,
                                                                         one_line) -> None:
    with FakeOpenAIServer(structured_outputs=False) as server:  # answers 400 to it, as OpenAI does
        line = one_line(issp(server.url, demo_data, tmp_path, "--model", "fake-model"))
        assert server.stats().requests == 1  # the one probe
        config = make_config(api_type="config", api_base=server.url, model="fake-model", domain_id=1,
                             data_dir=str(demo_data), output_dir=str(tmp_path / "ok"), structured=False)
        check_run(config)  # with --no-structured the same server passes
    assert line.startswith("socbench: error: --structured:") and "rejected the constrained request" in line
    assert "--no-structured" in line and "structured_outputs" in line


def test_server_ignoring_structured_output_is_one_line_naming_the_flag(demo_data, tmp_path, one_line) -> None:
    with FakeOpenAIServer(answer=lambda prompt, codes: "Sure! I'd say yes.") as server:
        line = one_line(issp(server.url, demo_data, tmp_path, "--model", "fake-model"))
    assert "--structured:" in line and "ignored the constraint (it replied \"Sure! I'd say yes.\")" in line
