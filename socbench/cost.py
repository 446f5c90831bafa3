"""The cost of a run before it starts (``--dry_run``; after it, ``Answers.usage`` in the summary).

Every unit's requests are built as the flow sends them; those the engine cache answers are not sent, the
rest's prompt tokens are counted by the model's tokenizer or the server's ``/tokenize``, else estimated (4
characters a token) and labelled so. Completion tokens are an upper bound. Nothing is sent or written.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, NamedTuple

from socbench import pipeline
from socbench.engines.settings import EngineSettings
from socbench.outcomes import Outcome
from socbench.report.terminal import terminal_table
from socbench.studies import task_for
from socbench.task import Request
from socbench.types import GENERATED, LoglikelihoodRequest

log = logging.getLogger("socbench")
CHARS_PER_TOKEN = 4  # the estimate where no tokenizer answers (a common rule of thumb for English text)


class UnitCost(NamedTuple):
    label: str
    requests: int  # distinct requests of the unit
    cached: int  # of those, answered by the engine cache: not sent
    sent: int  # requests the backend would send (over HTTP, one per code where codes are several tokens)
    prompt_tokens: int
    completion_tokens: int  # at most


class _Tokens:
    """Prompt tokens: the server's ``/tokenize``, the model's tokenizer, else an estimate (``estimated``)."""

    def __init__(self, settings: EngineSettings, backend: Any) -> None:
        self.server = backend if hasattr(backend, "planned") else None
        self.estimated = False
        if self.server is None:
            from socbench.preflight import TokenCounter, model_tokenizer

            self.tokenizer = model_tokenizer(settings)
            self.counter = TokenCounter(self.tokenizer)

    def count(self, method: str, requests: list[Request]) -> tuple[int, int]:
        """(requests sent, their prompt tokens)."""
        if self.server is None:
            return len(requests), sum(map(self._exact, requests))
        calls, counts = self.server.planned(method, requests)
        self.estimated = self.estimated or counts is None
        counts = counts if counts is not None else list(map(_estimate, requests))
        return sum(calls), sum(n * tokens for n, tokens in zip(calls, counts))

    def _exact(self, request: Request) -> int:
        from socbench.engines._chat import prompt_text, started

        if isinstance(request, LoglikelihoodRequest):
            return self.counter.count(request.context + request.continuation, True)
        return self.counter.count(prompt_text(self.tokenizer, request) + started(request), not request.chat)

    @property
    def how(self) -> str:
        if self.estimated:
            return f"an estimate ({CHARS_PER_TOKEN} characters a token: the server has no /tokenize)"
        return "the server's /tokenize" if self.server is not None else "the model's tokenizer"


def _estimate(request: Request) -> int:
    text = request.context + request.continuation if isinstance(request, LoglikelihoodRequest) else \
        "".join(m.content for m in request.messages) + request.answer_prefix
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def unit_cost(found: pipeline.Plan, engine: Any, tokens: _Tokens) -> UnitCost:
    requests = found.prompts.requests
    todo = pipeline.to_send(engine, requests)
    sent = prompt = completion = 0
    for method, group in todo.items():
        calls, counted = tokens.count(method, group) if group else (0, 0)
        sent, prompt = sent + calls, prompt + counted
        completion += sum(r.sampling.max_tokens for r in group) if method == "generate" else \
            calls if method == "option_logprobs" else 0
    total = pipeline.request_count(requests)
    return UnitCost(found.unit.label, total, total - sum(map(len, todo.values())), sent, prompt, completion)


def dry_run(config: Any) -> Outcome:
    """What ``config``'s run would send, unit by unit; the task's own checks first (``/tokenize`` sends the
    prompts, so a study whose data may not go to the server is refused)."""
    study = task_for(config)
    for note in study.check():
        log.warning(note)
    settings = config.engine_settings()
    from socbench.engines.registry import create_engine

    # behind its engine cache where one exists (a dry run creates none); nothing loads
    cache = settings.cache_dir
    engine = create_engine(settings.api_type, settings.model, settings=settings.backend_options(),
                           cache_dir=cache if cache is not None and Path(cache).is_dir() else None,
                           cache_store=settings.cache_store)
    try:
        backend = getattr(engine, "backend", engine)
        tokens = _Tokens(settings, backend)
        plans = pipeline.plans(study)
        costs = [unit_cost(found, engine, tokens) for found in plans.values()]
    finally:
        engine.close()
    where = f"the server at {backend.identity['api_base']}" if tokens.server else settings.api_type
    lines = [f"Dry run of socbench {study.name}, model {settings.model} on {where}: nothing was sent.",
             *_table(config, costs), f"Prompt tokens: counted by {tokens.how}; completion tokens: at most "
             "max_tokens per generated answer, 1 per option-scoring request, 0 for a log-likelihood. "
             "Over HTTP, option scoring asks once per code where codes are several tokens."]
    if settings.batch:
        limits = backend.settings
        lines.append(f"Through the Batch API (--batch): each unit's requests in files of at most "
                     f"{limits.batch_max_requests:,} requests and {limits.batch_max_bytes:,} bytes, answered "
                     f"within {limits.batch_window}.")
    unread = [unit.label for unit in study.units() if unit not in plans]
    if unread:
        lines.append(f"Left out, their data cannot be read (the run fails them): {', '.join(unread)}.")
    structured = getattr(getattr(backend, "settings", None), "structured_mode", "none") != "none"
    if structured and getattr(config, "mode", None) in GENERATED and config.use_structured \
            and any(c.sent for c in costs):
        lines.append("The run also sends 1 test request before it starts (--structured: does the server "
                     "honour the constraint?).")
    return Outcome("\n".join(lines), {})


def _table(config: Any, costs: list[UnitCost]) -> list[str]:
    """One row per unit and their total; with a price given, the cost of each (at most)."""
    # what a run pays of the prices given: ``--price_batch_discount`` through the Batch API, else all
    share = config.price_batch_discount if config.engine_settings().batch else 1.0
    prices = ((config.price_prompt or 0.0) * share, (config.price_completion or 0.0) * share)
    priced = config.price_prompt is not None or config.price_completion is not None
    total = UnitCost("total", *(sum(c[i] for c in costs) for i in range(1, len(UnitCost._fields))))
    head = ["unit", "requests", "cached: not sent", "to send", "prompt tokens", "max completion tokens",
            *(["max cost"] if priced else [])]
    rows = []
    for c in [*costs, total]:
        cost = (c.prompt_tokens * prices[0] + c.completion_tokens * prices[1]) / 1e6
        rows.append([c.label, *(f"{n:,}" for n in c[1:]), *([f"{cost:,.4f}"] if priced else [])])
    rate = f" (the Batch API's rate: {share:g} of the prices given)" if share != 1 else ""
    note = [f"Cost at {prices[0]:g} per 1M prompt tokens and {prices[1]:g} per 1M completion tokens{rate}."]
    return terminal_table(head, rows) + (note if priced else [])
