"""The one pipeline every Task runs: load -> special options -> prompts -> engine -> extract -> score ->
report. The first three are remembered per (run configuration, unit) in this process, so the preflight,
``socbench issp prompts``, the benchmarks and the flow build a unit's prompts once. ``generate`` is the
one engine call: requests of every kind in, answers in order out, each distinct request sent once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from socbench.engines.base import Engine, ResultSink
from socbench.errors import ConfigError, SocbenchError, incomplete_reason
from socbench.task import Prompts, Request, Task, Unit
from socbench.types import Answers, EngineResult, LoglikelihoodRequest

T = TypeVar("T")
_LOCK = threading.Lock()
_MEMO: dict[tuple[str, str, int], Any] = {}


def task_key(task: Task) -> str:
    """What a unit's samples and prompts depend on: the task and its whole configuration."""
    return f"{task.name}:{task.config.model_dump_json()}"


def _remembered(stage: str, task: Task, unit: Unit, build: Callable[[], T]) -> T:
    key = (stage, task_key(task), unit.id)
    with _LOCK:
        if key in _MEMO:
            return _MEMO[key]
    value = build()
    with _LOCK:  # built twice at once: both callers get the first one's
        return _MEMO.setdefault(key, value)


def forget() -> None:
    """Drop every remembered stage (a finished run's; a notebook's next run starts clean)."""
    with _LOCK:
        _MEMO.clear()


def load(task: Task, unit: Unit) -> Any:
    return _remembered("load", task, unit, lambda: task.load(unit))


def special_options(task: Task, unit: Unit, data: Any) -> Any:
    return _remembered("options", task, unit, lambda: task.special_options(data))


def prompts(task: Task, unit: Unit, samples: Any) -> Prompts:
    return _remembered("prompts", task, unit, lambda: task.prompts(samples))


@dataclass(frozen=True)
class Plan:
    """A unit ready for the engine: its samples and its prompts."""

    unit: Unit
    samples: Any
    prompts: Prompts


def plan(task: Task, unit: Unit) -> Plan:
    """The first three stages of one unit (remembered)."""
    samples = special_options(task, unit, load(task, unit))
    return Plan(unit, samples, prompts(task, unit, samples))


def plans(task: Task) -> dict[Unit, Plan]:
    """Every unit's plan; one whose data cannot be read is left out (it fails on its own in the flow)
    unless it is the only one. A flag the data cannot take (``--groups`` naming no attribute of a unit) is
    the run's bad input, not one unit's: it stops the run before any work."""
    units = task.units()
    found = {}
    for unit in units:
        try:
            found[unit] = plan(task, unit)
        except SocbenchError as exc:
            if isinstance(exc, ConfigError) or len(units) == 1:
                raise
    return found


def all_requests(found: dict[Unit, Plan]) -> list[Request]:
    return [request for unit_plan in found.values() for request in unit_plan.prompts.requests]


def method_of(request: Request) -> str:
    """The engine method that answers ``request``."""
    if isinstance(request, LoglikelihoodRequest):
        return "loglikelihood"
    return "option_logprobs" if request.mode == "logprobs" else "generate"


def distinct(requests: Sequence[Request]) -> dict[str, list[Request]]:
    """Requests by engine method, each distinct request once (shared ones, e.g. CP-UN's, are asked once)."""
    by_method: dict[str, dict[str, Request]] = {}
    for request in requests:
        by_method.setdefault(method_of(request), {}).setdefault(request.key, request)
    return {method: list(found.values()) for method, found in by_method.items()}


def request_count(requests: Sequence[Request]) -> int:
    """How many requests ``generate`` sends (the progress bar's total)."""
    return sum(len(group) for group in distinct(requests).values())


def generate(engine: Engine, requests: Sequence[Request], on_result: ResultSink | None = None) -> list[Any]:
    """Every request answered by its method, in ``requests`` order (one call per method)."""
    answers = {(method, r.key): answer for method, group in distinct(requests).items()
               for r, answer in zip(group, getattr(engine, method)(group, on_result=on_result), strict=True)}
    return [answers[method_of(r), r.key] for r in requests]


def answer(engine: Engine, requests: Sequence[Request], on_result: ResultSink | None = None) -> Answers:
    """``generate`` with what it cost: seconds, the engine's identity, cache hits and misses, and ``usage``
    (requests sent, answers from the cache, the backend's token counts). Units on one engine run in turn."""
    start = time.perf_counter()
    stats = getattr(engine, "stats", None)
    meter = getattr(getattr(engine, "backend", engine), "usage", None)
    hits, misses = (stats.hits, stats.misses) if stats is not None else (0, 0)
    tokens = meter.total() if meter is not None else {}
    results = generate(engine, requests, on_result)
    cache = {"hits": stats.hits - hits, "misses": stats.misses - misses} if stats is not None else {}
    used = {key: n - tokens[key] for key, n in meter.total().items()} if meter is not None else {}
    sent = cache["misses"] if cache else request_count(requests)
    usage = {"requests": sent, "from_cache": cache.get("hits", 0), **used}
    return Answers(tuple(results), time.perf_counter() - start, dict(engine.identity), cache, usage)


def engine_errors(answers: Answers) -> str | None:
    """Why a unit is incomplete: its requests the engine left unanswered (None: every one answered)."""
    failed = [r.error for r in answers.results if isinstance(r, EngineResult) and r.error is not None]
    return incomplete_reason(len(failed), failed)


def release(task: Task, unit: Unit) -> None:
    """Forget a unit's remembered stages: its flow holds them now, each only until its last stage."""
    with _LOCK:
        for stage in ("load", "options", "prompts"):
            _MEMO.pop((stage, task_key(task), unit.id), None)


def score_unit(task: Task, unit: Unit, engine: Engine) -> Any:
    """One unit's stages in this process, without Prefect or files (benchmarks, tests): the scored unit."""
    found = plan(task, unit)
    extracted = task.extract(found.prompts, answer(engine, found.prompts.requests))
    return task.score(found.samples, found.prompts.plan, extracted)


def to_send(engine: Engine, requests: Sequence[Request]) -> dict[str, list[Request]]:
    """``distinct`` less what the engine cache answers (all of them for an engine without a cache)."""
    groups, unanswered = distinct(requests), getattr(engine, "unanswered", None)
    return groups if unanswered is None else {method: unanswered(method, g) for method, g in groups.items()}


def uncached(engine: Engine, requests: Sequence[Request]) -> int:
    """How many requests the engine cache cannot answer."""
    return sum(map(len, to_send(engine, requests).values()))
