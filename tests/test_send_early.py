"""The CLI's early requests (``pipeline.preload`` on an API engine while Prefect's API starts): each is sent
once, and the unit's own call gets its answers as if it had sent them (requests, tokens, cache counts);
a request that failed early is not sent again in that run (a refusal or a bad key: the unit is incomplete,
and the next run sends exactly what is missing, as without the early requests)."""

from __future__ import annotations

from pathlib import Path

from socbench import pipeline
from socbench.config import make_config
from socbench.engines.session import forget_engine, get_engine
from socbench.studies import task_for
from tests.support.fake_openai import FakeOpenAIServer


def _answers(url: str, out: Path, early: bool) -> list:
    """Every unit's ``pipeline.answer``, after ``preload`` when ``early``."""
    config = make_config(api_type="openai", api_base=url, model="fake-model", domain_id="all",
                         start_domain_id=10, interview_count=3, output_dir=out)
    settings = config.engine_settings()
    engine = get_engine(settings)
    try:
        found = pipeline.plans(task_for(config))
        if early:
            assert pipeline.preload(engine, found)
        return [pipeline.answer(engine, unit_plan.prompts.requests) for unit_plan in found.values()]
    finally:
        forget_engine(settings).close()
        pipeline.forget()


def _texts(answers: list) -> list:
    return [[result.text for result in unit.results] for unit in answers]


def test_early_requests_are_the_units_own(tmp_path: Path) -> None:
    with FakeOpenAIServer(reasoning_tokens=2) as server:
        plain = _answers(server.url, tmp_path / "plain", early=False)
        sent = server.stats().requests
        server.reset_stats()
        early = _answers(server.url, tmp_path / "early", early=True)
        assert server.stats().requests == sent > 0  # nothing twice
    assert [a.usage for a in early] == [a.usage for a in plain]
    assert [a.cache for a in early] == [a.cache for a in plain]
    assert _texts(early) == _texts(plain)
    assert pipeline._EARLY == {}


def test_a_request_failed_early_stays_failed_until_the_next_run(tmp_path: Path) -> None:
    with FakeOpenAIServer(faults={"401": 0.3}, fail_attempts=1) as server:  # each fails its first attempt
        early = _answers(server.url, tmp_path, early=True)
        seen = server.stats()
        failed = seen.statuses["401"]
        errors = sum(result.error is not None for unit in early for result in unit.results)
        assert failed > 0 and errors >= failed  # sent once: each 401 is the unit's engine error
        assert sum(u.usage["requests"] for u in early) == seen.requests == seen.statuses["200"] + failed
        rerun = _answers(server.url, tmp_path, early=True)  # the next run: only what failed is sent
        assert server.stats().requests - seen.requests == failed
    assert all(result.error is None for unit in rerun for result in unit.results)
    assert sum(u.usage["requests"] for u in rerun) == failed
