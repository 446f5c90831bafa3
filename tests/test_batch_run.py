"""``socbench issp --batch`` end to end against the local Batch API (``support/fake_batch.py``): a run that
completes, one killed (SIGKILL) while it waits and rerun, one whose batch partly fails (incomplete, exit 1,
and the rerun sends exactly the failed requests), and the dry run's batch price."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_yardsticks_cli import write_data

from socbench.config import make_config
from socbench.cost import dry_run
from support.cli import socbench
from support.fake_batch import FakeBatchServer
from support.waiting import wait_for

POLL = json.dumps({"batch_poll_s": 0.05, "backoff_base_s": 0.01})


def issp_args(server: FakeBatchServer, data: Path, out: Path, people: int = 8) -> tuple[str, ...]:
    return ("issp", "--api_type", "openai", "--api_base", server.url, "--model", "fake-model", "--batch",
            "--engine", POLL, "--data_dir", str(data), "--domain_id", "1", "--interview_count", str(people),
            "--output_dir", str(out))


def test_the_dry_run_prices_a_batch_run_at_the_batch_rate(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    data = write_data(tmp_path)
    with FakeBatchServer() as server:
        common = dict(api_type="openai", api_base=server.url, model="fake-model", data_dir=str(data),
                      domain_id=1, interview_count=4, output_dir=tmp_path / "out", dry_run=True,
                      price_prompt=2, price_completion=8)
        direct = dry_run(make_config(**common)).printed
        batch = dry_run(make_config(**common, batch=True)).printed
        quarter = dry_run(make_config(**common, batch=True, price_batch_discount=0.25)).printed
        assert server.batch_stats().uploads == 0  # nothing submitted
    cost = {name: float(re.search(r"^\| total .*\| ([\d,.]+) +\|$", text, re.M).group(1).replace(",", ""))
            for name, text in (("direct", direct), ("batch", batch), ("quarter", quarter))}
    assert cost["batch"] == pytest.approx(cost["direct"] / 2, abs=1e-4)
    assert cost["quarter"] == pytest.approx(cost["direct"] / 4, abs=1e-4)
    assert "the Batch API's rate: 0.5 of the prices given" in batch
    assert "files of at most 50,000 requests and 200,000,000 bytes, answered within 24h" in batch


@pytest.mark.slow  # runs flows on the session's Prefect API
def test_a_partly_failed_batch_run_is_incomplete_and_its_rerun_sends_exactly_the_failed(
        api_url: str, tmp_path: Path) -> None:
    data, out = write_data(tmp_path), tmp_path / "out"
    with FakeBatchServer(fail_share=0.25) as server:
        first = socbench(*issp_args(server, data, out), code=1)
        failed = server.batch_stats()
        server.fail_share = 0.0
        socbench(*issp_args(server, data, out))
        stats = server.batch_stats()
        direct = server.stats().requests  # the preflight's one structured probe a run: never a batch
    assert "incomplete: rerun the same command" in first.stderr
    assert len(failed.batches) == 1 and len(stats.batches) == 2
    again = {cid for cid, n in stats.submitted.items() if n == 2}
    second = server.batches[stats.batches[1]].lines
    assert {line["custom_id"] for line in second} == again and 0 < len(again) < len(stats.submitted)
    assert set(stats.submitted.values()) == {1, 2} and direct == 2
    summary = json.loads((out / "fake-model" / "summary.json").read_text())
    assert summary["domains"][0]["engine_errors"] == 0


@pytest.mark.slow  # a socbench subprocess, SIGKILLed while it waits for its batch; flows on the session API
def test_killed_while_waiting_the_rerun_resumes_the_same_batch(cli_api_env: dict, tmp_path: Path) -> None:
    data, out = write_data(tmp_path), tmp_path / "out"
    with FakeBatchServer(per_look=3) as server:
        server.hold()
        args = issp_args(server, data, out)
        run = subprocess.Popen([sys.executable, "-m", "socbench.cli", *args], env=cli_api_env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(lambda: server.batch_stats().looks >= 3 or run.poll() is not None, 180)
        finally:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
        waited = server.batch_stats()
        assert waited.batches == ["batch_1"] and waited.looks >= 3, "the run did not wait for its batch"
        assert server.state("batch_1") == "in_progress"
        records = list((out / ".cache" / "batches").glob("*.batch.json"))
        assert len(records) == 1 and json.loads(records[0].read_text())["batch_id"] == "batch_1"
        server.release()
        socbench(*args)
        stats = server.batch_stats()
    assert stats.batches == ["batch_1"] and stats.uploads == 1 and set(stats.submitted.values()) == {1}
    assert not list((out / ".cache" / "batches").glob("*.batch.json"))  # collected
    assert (out / "fake-model" / "summary.json").is_file()
