"""Stage 4 (named as on the design card), the engine's answers to a unit's requests on any backend, each
stored in the engine cache as it finishes: a rerun or a retry sends exactly the requests without an answer.
"""

from __future__ import annotations

import time

from prefect import get_run_logger
from prefect.artifacts import create_progress_artifact, update_progress_artifact

from socbench import pipeline, progress
from socbench.engines.session import get_engine
from socbench.engines.settings import EngineSettings
from socbench.task import Prompts
from socbench.tasks import stage
from socbench.types import Answers


class RequestProgress:
    """The engines' ``on_result`` sink: each answer advances the CLI's bar (``socbench.progress``) and the
    UI's progress artifact, updated at most every 2 s (each update is a call to the API), and at 100 % when
    the stage has every answer."""

    def __init__(self, key: str, description: str, total: int) -> None:
        self.artifact = create_progress_artifact(0.0, key=key, description=description)
        self.total, self.done = total, 0
        self.updated = time.monotonic()  # of the artifact's last update (its creation, at 0 %)
        progress.requests(total)

    def __call__(self, index: int, result: object) -> None:
        self.done += 1
        progress.advance()
        if time.monotonic() - self.updated >= 2.0 and self.done < self.total:
            self.updated = time.monotonic()
            update_progress_artifact(self.artifact, progress=100.0 * self.done / self.total)


@stage(retries=2, retry_delay_seconds=[5, 30])
def vllm_generate(prompts: Prompts, settings: EngineSettings, key: str, label: str) -> Answers:
    """Every request answered on the session's engine for ``settings``; each answer counted on the
    UI's progress artifact ``key`` and the CLI's bar."""
    engine = get_engine(settings)
    total = pipeline.request_count(prompts.requests)
    answered = RequestProgress(key, f"{label}: requests answered", total)
    answers = pipeline.answer(engine, prompts.requests, on_result=answered)
    update_progress_artifact(answered.artifact, progress=100.0)
    cache = answers.cache
    said = f"{cache['hits']} from the engine cache, {cache['misses']} sent" if cache else "no cache"
    get_run_logger().info("%s: %d requests, %s", label, total, said)
    return answers
