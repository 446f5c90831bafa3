"""``--batch``: the OpenAI-compatible backend through the Batch API of a local server that implements the
files and batches endpoints as OpenAI documents them (``support/fake_batch.py``), real HTTP on 127.0.0.1.

What it promises: the answers are the direct requests' own; a batch outlives its process (its record is
written before anything waits, a rerun polls it and never submits its requests again); what a batch does
not answer (a failed line, expiry, cancel) is exactly what the next run sends; large runs are split at the
file limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_engine_openai import FAST, expected_code, prompt, raw_prompt

from socbench.engines import create_engine
from socbench.engines.batch import BatchLedger, _Api, batch_line, custom_id, split
from socbench.errors import ConfigError
from socbench.types import LoglikelihoodRequest
from support.fake_batch import FakeBatchServer

FAST_BATCH = {**FAST, "batch_poll_s": 0.01}


class Interrupted(Exception):
    """Stands for a kill of the waiting process (raised from inside the wait)."""


def engine(server: FakeBatchServer, cache: Path, **settings):
    """A cached batch engine on ``server``, its batches recorded under ``cache/batches``."""
    options = {"api_base": server.url, "batch": True, "batch_dir": cache / "batches", **FAST_BATCH,
               **settings}
    return create_engine("openai", "fake-model", settings=options, cache_dir=cache)


def interrupt_when(eng, condition) -> None:
    """Make ``eng``'s wait stop (as a kill would) at the first batch state ``condition(line)`` accepts."""
    def hear(line: str) -> None:
        if condition(line):
            raise Interrupted(line)
    eng.backend._send.on_status = hear


def answered(results) -> list[str | None]:
    return [None if r.error else json.loads(r.text)["answer"] for r in results]


def test_a_batch_run_answers_each_request_as_the_direct_one_does(tmp_path: Path) -> None:
    requests = [prompt(i) for i in range(6)] + [raw_prompt(i, ("1", "2")) for i in range(3)]
    with FakeBatchServer() as server:
        eng = engine(server, tmp_path)
        results = eng.generate(requests)
        stats = server.batch_stats()
        direct = create_engine("openai", "fake-model", settings={"api_base": server.url, **FAST})
        direct = direct.generate(requests)
        eng.close()
        sent_directly = server.stats().requests
    assert [r.text for r in results] == [r.text for r in direct]
    assert answered(results)[:6] == [expected_code(r) for r in requests[:6]]
    assert len(stats.batches) == 2  # one endpoint a batch: chat and completions
    assert set(stats.submitted.values()) == {1} and len(stats.submitted) == len(requests)
    assert sent_directly == len(requests)  # the direct run's: the batch run sent none on its own
    assert BatchLedger(tmp_path / "batches").records() == []  # collected: nothing left to resume


def test_killed_while_waiting_the_rerun_resumes_the_same_batch_and_sends_nothing_again(tmp_path: Path):
    requests = [prompt(i) for i in range(5)]
    with FakeBatchServer(per_look=2) as server:
        server.hold()
        first = engine(server, tmp_path)
        interrupt_when(first, lambda line: "in_progress" in line)
        with pytest.raises(Interrupted):
            first.generate(requests)
        first.close()
        [record] = BatchLedger(tmp_path / "batches").records()
        assert record.batch_id == "batch_1" and len(record.custom_ids) == 5  # recorded before the wait
        server.release()
        seen: list[str] = []
        rerun = engine(server, tmp_path)
        rerun.backend._send.on_status = seen.append
        results = rerun.generate(requests)
        rerun.close()
        stats = server.batch_stats()
    assert answered(results) == [expected_code(r) for r in requests]
    assert stats.batches == ["batch_1"] and stats.uploads == 1 and set(stats.submitted.values()) == {1}
    assert any("batch_1 in_progress: 2 of 5 done" in line for line in seen)  # the watcher's counts


def test_killed_between_creating_the_batch_and_recording_it_the_rerun_finds_it(tmp_path: Path,
                                                                              monkeypatch) -> None:
    real = _Api.create

    async def create_then_die(self, file_id, path):
        await real(self, file_id, path)
        raise Interrupted("killed before the batch id was recorded")

    with FakeBatchServer() as server:
        monkeypatch.setattr(_Api, "create", create_then_die)
        with pytest.raises(Interrupted):
            engine(server, tmp_path).generate([prompt(1), prompt(2)])
        monkeypatch.setattr(_Api, "create", real)
        results = engine(server, tmp_path).generate([prompt(1), prompt(2)])
        stats = server.batch_stats()
    assert all(r.error is None for r in results)
    assert stats.batches == ["batch_1"] and set(stats.submitted.values()) == {1}


def test_a_partly_failed_batch_leaves_exactly_the_failed_requests_for_the_next_run(tmp_path: Path) -> None:
    requests = [prompt(i) for i in range(20)]
    with FakeBatchServer(fail_share=0.3) as server:
        first = engine(server, tmp_path).generate(requests)
        failed = [r.key for r in first if r.error]
        assert 0 < len(failed) < len(requests) and all("HTTP 500" in r.error for r in first if r.error)
        server.fail_share = 0.0
        rerun = engine(server, tmp_path).generate(requests)
        stats = server.batch_stats()
    assert all(r.error is None for r in rerun)
    assert [r.cached for r in rerun] == [r.error is None for r in first]  # the answered ones from the cache
    second = server.files[server.batches[stats.batches[-1]].data["input_file_id"]]  # the rerun's input
    assert len(second.decode().splitlines()) == len(failed)
    assert set(stats.submitted.values()) == {1} | ({2} if failed else set())
    assert sum(n == 2 for n in stats.submitted.values()) == len(failed)


@pytest.mark.parametrize("ending", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_leaves_its_unanswered_requests(tmp_path: Path, ending: str) -> None:
    requests = [prompt(i) for i in range(5)]
    with FakeBatchServer(per_look=2, expire_after=2 if ending == "expired" else None) as server:
        eng = engine(server, tmp_path)
        if ending == "cancelled":
            interrupt_when(eng, lambda line: "in_progress: 2 of 5" in line and server.cancel_all())
        first = eng.generate(requests)
        missing = [r.error for r in first if r.error]
        assert len(missing) == 3 and all(ending in m for m in missing)
        server.expire_after = None
        rerun = engine(server, tmp_path).generate(requests)
        stats = server.batch_stats()
    assert all(r.error is None for r in rerun) and len(stats.batches) == 2
    assert sorted(stats.submitted.values()) == [1, 1, 2, 2, 2]


def test_large_runs_are_split_at_the_file_limits(tmp_path: Path) -> None:
    requests = [prompt(i) for i in range(7)]
    with FakeBatchServer(max_requests=3) as server:
        results = engine(server, tmp_path, batch_max_requests=3).generate(requests)
        by_count = server.batch_stats()
    assert all(r.error is None for r in results) and len(by_count.batches) == 3
    lines = [(f"id{i}", b"x" * 40 + b"\n") for i in range(5)]
    assert [len(c) for c in split(lines, 50_000, 100)] == [2, 2, 1]  # at most 100 bytes a file
    with pytest.raises(ConfigError, match="over the file limit"):
        split(lines, 50_000, 10)


def test_option_logprobs_loglikelihood_and_the_file_format(tmp_path: Path) -> None:
    requests = [prompt(i, mode="logprobs") for i in range(3)]
    with FakeBatchServer() as server:
        direct = create_engine("openai", "fake-model", settings={"api_base": server.url, **FAST})
        eng = engine(server, tmp_path)
        assert [r.option_logprobs for r in eng.option_logprobs(requests)] == \
            [r.option_logprobs for r in direct.option_logprobs(requests)]
        call = eng.backend._generate_call(requests[0])
        pairs = [LoglikelihoodRequest(f"Context {i} is", " fine") for i in range(3)]
        assert eng.loglikelihood(pairs) == direct.loglikelihood(pairs)  # CP's scoring (mcq)
    line = json.loads(batch_line(call, custom_id(call)))
    assert line == {"custom_id": custom_id(call), "method": "POST", "url": "/v1/chat/completions",
                    "body": call.body}


def test_batch_needs_the_openai_backend_and_a_cache_folder(tmp_path: Path) -> None:
    from socbench.config import RunConfig

    with pytest.raises(ConfigError, match="--batch needs --api_type openai"):
        RunConfig(engine={"api_type": "vllm", "batch": True})
    with pytest.raises(ConfigError, match="engine cache folder"):
        create_engine("openai", "m", settings={"api_base": "http://127.0.0.1:9", "batch": True})
    config = RunConfig(output_dir=str(tmp_path), engine={"api_type": "openai", "api_base": "http://127.0.0.1:9",
                                                         "model": "m", "batch": True})
    assert config.engine_settings().backend_options()["batch_dir"] == tmp_path / ".cache" / "batches"


def test_a_batch_the_server_refuses_leaves_its_requests_for_the_next_run(tmp_path: Path) -> None:
    with FakeBatchServer() as server:  # OpenAI offers only "24h": another window is HTTP 400
        results = engine(server, tmp_path, batch_window="48h").generate([prompt(1), prompt(2)])
    assert all("refused (HTTP 400)" in r.error for r in results)
    assert BatchLedger(tmp_path / "batches").records() == []


def test_the_console_shows_a_batch_s_state_while_it_waits() -> None:
    import io

    from socbench import progress
    from socbench.cli.inprocess import ConsoleProgress

    stream = io.StringIO()
    with progress.listening(ConsoleProgress(stream)):
        progress.begin("domain 1 Citizenship")
        progress.requests(5)
        progress.status("batch batch_1 in_progress: 2 of 5 done, 0 failed")
    assert stream.getvalue() == "domain 1 Citizenship: batch batch_1 in_progress: 2 of 5 done, 0 failed\n"


def test_a_refused_upload_is_one_warning_without_the_key(tmp_path: Path, caplog) -> None:
    from pydantic import SecretStr

    with FakeBatchServer() as server:
        eng = engine(server, tmp_path, api_key=SecretStr("sk-secret-123"))
        server.files = None  # every upload now fails on the server: HTTP 500
        results = eng.generate([prompt(1)])
    assert results[0].error == "batch: the input file could not be uploaded"
    assert "batch API POST /v1/files failed: HTTP 500" in caplog.text and "sk-secret-123" not in caplog.text


def test_the_batch_api_waits_a_throttling_server_s_retry_after(tmp_path: Path) -> None:
    """The files and batches calls share the direct requests' retry policy: a 429's ``Retry-After`` is
    waited (they used a fixed backoff of their own, which ignored it)."""
    import time

    from aiohttp import web

    class Throttling(FakeBatchServer):
        looked: list[float] = []

        async def look(self, request: web.Request) -> web.Response:
            self.looked.append(time.monotonic())
            if len(self.looked) == 1:
                return web.json_response({"error": {"message": "slow down"}}, status=429,
                                         headers={"Retry-After": "0.5"})
            return await super().look(request)

    with Throttling() as server:
        results = engine(server, tmp_path).generate([prompt(1)])
    assert results[0].error is None
    assert server.looked[1] - server.looked[0] >= 0.5  # FAST's own backoff is at most 0.05 s
