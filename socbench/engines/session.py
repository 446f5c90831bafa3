"""Process-wide engines, created on first use and closed once (the flows' ``finally``).

Prefect tasks cannot take an engine as an input (it is unhashable and would turn the
task cache off), so tasks ask this module for the engine of their run configuration.
Creating an engine is cheap: backends load the model on their first cache miss, so a
fully cached rerun never loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from socbench.config import RunConfig
from socbench.engines.base import Engine, ResultSink
from socbench.types import EngineResult, PromptRequest

_LOCK = threading.Lock()
_ENGINES: dict[str, Engine] = {}


def engine_settings(config: RunConfig) -> dict:
    """Backend settings from the run config (secrets are resolved by the backend, not here)."""
    settings = dict(config.engine)
    if config.api_type == "config":
        settings.update(api_base=config.api_base, concurrent_requests=config.concurrent_requests,
                        timeout_s=config.request_timeout_s, api_key_env=config.api_key_env)
    return settings


def _session_key(config: RunConfig) -> str:
    return (f"{config.api_type}|{config.model}|{config.api_base}|{sorted(config.engine.items())}"
            f"|{config.engine_cache_dir}")


def get_engine(config: RunConfig) -> Engine:
    """The cached engine for this configuration, made on first call."""
    from socbench.engines.registry import create_engine

    key = _session_key(config)
    with _LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = create_engine(config.api_type, config.model, settings=engine_settings(config),
                                          cache_dir=config.engine_cache_dir)
        return _ENGINES[key]


def register_engine(config: RunConfig, engine: Engine) -> None:
    """Use ``engine`` for runs of ``config`` (an already started backend, or a test's own);
    it is then closed by ``close_engines`` like any other."""
    with _LOCK:
        _ENGINES[_session_key(config)] = engine


def close_engines() -> int:
    """Tear down every engine of this process; idempotent. Returns how many were open.

    One engine failing to close does not keep the others open: all are closed, then the
    first failure is raised.
    """
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
