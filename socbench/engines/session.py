"""Process-wide engines, one per ``EngineSettings``, created on first use and closed once (the
flows' ``finally``): an engine is not serialisable, so Prefect tasks ask this module for it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from socbench.engines.base import Engine, ResultSink
from socbench.engines.settings import EngineSettings
from socbench.types import EngineResult, PromptRequest

_LOCK = threading.Lock()
_ENGINES: dict[str, Engine] = {}


def _session_key(settings: EngineSettings) -> str:
    return settings.model_dump_json()


def get_engine(settings: EngineSettings) -> Engine:
    """The cached engine for these settings, made on first call."""
    from socbench.engines.registry import create_engine

    key = _session_key(settings)
    with _LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = create_engine(settings.api_type, settings.model,
                                          settings=settings.backend_options(), cache_dir=settings.cache_dir,
                                          cache_store=settings.cache_store)
        return _ENGINES[key]


def register_engine(settings: EngineSettings, engine: Engine) -> None:
    """Use ``engine`` for runs with these settings (an already started backend, or a test's own);
    it is then closed by ``close_engines`` like any other."""
    with _LOCK:
        _ENGINES[_session_key(settings)] = engine


def close_engines() -> int:
    """Tear down every engine of this process; idempotent. Returns how many were open. All are
    closed even if one fails; then the first failure is raised."""
    with _LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    failure: BaseException | None = None
    for engine in engines:
        try:
            engine.close()
        except BaseException as exc:  # noqa: BLE001 - close the rest first, then report it
            failure = failure or exc
    if failure is not None:
        raise failure
    return len(engines)


def prompt_method(prompts: Sequence[PromptRequest]) -> str:
    """The engine method for these prompts: ``option_logprobs`` or ``generate``."""
    modes = {p.mode for p in prompts}
    if len(modes) > 1:
        raise ValueError(f"one run uses one mode, got {sorted(modes)}")
    return "option_logprobs" if modes == {"logprobs"} else "generate"


def run_prompts(engine: Engine, prompts: Sequence[PromptRequest],
                on_result: ResultSink | None = None) -> list[EngineResult]:
    """Send prompts to the engine by their mode; same order out as in."""
    if not prompts:
        return []
    return getattr(engine, prompt_method(prompts))(prompts, on_result=on_result)
