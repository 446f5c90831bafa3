"""A new study type is one module plus one registry entry (issue 44): a toy study, defined in a handful of
lines here and registered in ``STUDIES`` (no other file touched), runs through the CLI, ``socbench.evaluate``,
the generic flow, ``socbench report`` and the leaderboard, against the project's fake OpenAI server."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any, ClassVar

import pytest
from pydantic import Field

from socbench.studies import STUDIES, Study
from socbench.studies.generic import StudyConfig, StudyTask
from socbench.task import Prompts
from socbench.types import Answers, Message, PromptRequest
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer

QUESTIONS = {"What is 2+2?": "4", "What is 3+3?": "6", "What is 2*5?": "10"}
Samples = list[tuple[str, str]]  # (question, answer)
REPLIES = {"What is 2+2?": "4", "What is 3+3?": "6", "What is 2*5?": "11"}  # the server's: one wrong


class ToyConfig(StudyConfig):
    limit: int = Field(3, description="ask the first N questions")


@dataclass(frozen=True)
class ToyTask(StudyTask):
    name: ClassVar[str] = "toy"

    def load(self, unit: Any) -> Samples:
        return list(QUESTIONS.items())[: self.config.limit]

    def prompts(self, samples: Samples) -> Prompts:
        return Prompts(tuple(PromptRequest(q, (Message("user", q),)) for q, _ in samples))

    def extract(self, prompts: Prompts, answers: Answers) -> list[str]:
        return [(r.text or "").strip() for r in answers.results]

    def score(self, samples: Samples, plan: None, extracted: list[str]) -> dict[str, float]:
        return {"exact_match": mean(got == gold for (_, gold), got in zip(samples, extracted, strict=True))}


def reply(prompt: str, codes: tuple[str, ...]) -> str:
    return next(answer for question, answer in REPLIES.items() if question in prompt)


@pytest.fixture()
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy study in the registry, for this test only."""
    monkeypatch.setitem(STUDIES, "toy", Study("toy", f"{__name__}:ToyConfig", f"{__name__}:ToyTask",
                                              help="a toy study: arithmetic, exact match"))


def record(out: Path) -> dict:
    return json.loads((out / "fake-model" / "toy" / "toy_unit.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # runs the generic flow on the session's Prefect API
def test_a_toy_study_runs_everywhere(toy: None, api_url: str, tmp_path: Path) -> None:
    from socbench import evaluate
    from socbench.flows import run_inprocess
    from socbench.flows.generic import study
    from socbench.report.leaderboard import leaderboard

    out = tmp_path / "out"
    with FakeOpenAIServer(answer=reply) as server:
        engine = {"api_type": "openai", "api_base": server.url, "model": "fake-model"}
        done = socbench("toy", *(f"--{k}={v}" for k, v in engine.items()), "--output_dir", str(out))
        assert "## Study toy" in done.stdout and "| 0.6667 |" in done.stdout  # the run's table
        assert record(out)["metrics"] == {"exact_match": pytest.approx(2 / 3)}
        assert record(out)["task"] == "toy" and record(out)["complete"]

        result = evaluate("toy", output_dir=str(out), limit=2, **engine)
        assert result.complete and result.metrics == {"toy": {"exact_match": 1.0, "complete": True}}

        config = ToyConfig.model_validate({"engine": engine, "output_dir": out, "limit": 3})
        outcome = run_inprocess(study, config)  # the generic flow, as a deployment runs it
        assert outcome.ok and outcome.completed == [1] and study.name == "study"
    assert record(out)["metrics"]["exact_match"] == pytest.approx(2 / 3)

    socbench("report", str(out))
    board = (out / "report" / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Study toy" in board and "| fake-model/toy | fake-model | toy | yes | 0.6667 |" in board
    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "Other studies" in page and "exact_match" in page and "0.6667" in page
    (unit,) = leaderboard(out).units
    assert (unit.record.task, unit.record.unit, unit.run) == ("toy", "toy", "fake-model/toy")


def test_an_unregistered_study_is_one_line(toy: None) -> None:
    """The registry names the toy among the known studies; an unknown name is one line, exit 2."""
    done = socbench("nosuch", code=2)
    assert "toy" in done.stderr and "invalid choice" in done.stderr


def test_an_unanswered_request_leaves_the_toy_unit_incomplete(tmp_path: Path) -> None:
    """The defaults: one unit named after the study, in ``<model>/toy/``; a request the engine left
    unanswered makes the unit incomplete, and the tables say so instead of showing it as a result."""
    from socbench.log.read import read_units
    from socbench.log.write import write_unit_record
    from socbench.pipeline import engine_errors
    from socbench.report.units import units_markdown
    from socbench.types import EngineResult

    task = ToyTask(ToyConfig(output_dir=tmp_path, engine={"model": "fake-model"}))
    (unit,) = task.units()
    assert (unit.name, task.unit(1), task.folder()) == ("toy", unit, tmp_path / "fake-model" / "toy")
    answers = Answers((EngineResult("a", "4"), EngineResult("b", error="HTTP 500")), 0.1, {}, {})
    result = task.result(unit, {"exact_match": 0.5}, engine_errors(answers))
    assert result.incomplete_reason == "1 engine error, first: HTTP 500"
    write_unit_record(task.folder(), task.name, "fake-model", task.record(result))
    table = "\n".join(units_markdown(read_units(task.folder())))
    assert "| toy | fake-model | toy | no: 1 engine error, first: HTTP 500 | 0.5000 |" in table


def test_a_results_folder_is_read_as_runs_whatever_units_lie_in_them(tmp_path: Path) -> None:
    """A run folder's unit records (an ISSP domain's) do not make the results folder above it read as one
    run: every run under it is read, the toy's study folder too."""
    from socbench.log.read import load_runs
    from socbench.log.write import write_unit_record
    from socbench.task import UnitResult

    write_unit_record(tmp_path / "fake-model", "issp", "fake-model", UnitResult(3, "Family", {"acc": 0.5}))
    write_unit_record(tmp_path / "fake-model" / "toy", "toy", "fake-model", UnitResult(1, "toy", {"em": 1.0}))
    found = load_runs(tmp_path).units
    assert [(u.run, u.record.unit) for u in found] == [("fake-model", "Family"), ("fake-model/toy", "toy")]


def test_a_unit_the_study_does_not_have_is_one_config_error_line() -> None:
    """Before: ``next`` raised StopIteration (inside a Prefect flow, a RuntimeError with no message)."""
    from socbench.errors import ConfigError
    from socbench.studies.generic import StudyTask
    from socbench.task import Unit

    class One(StudyTask):
        name = "one"

        def units(self) -> list[Unit]:
            return [Unit(1, "one", "one")]

    assert One(config=None).unit(1).name == "one"
    with pytest.raises(ConfigError, match=r"one: no unit 7 \(its units: 1\)"):
        One(config=None).unit(7)
