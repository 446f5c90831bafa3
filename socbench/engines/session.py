"""Process-wide engines, one per ``EngineSettings``, created on first use: an engine is not serialisable,
so Prefect tasks ask this module for it. A flow's ``finally`` closes them.
"""

from __future__ import annotations

import threading

from socbench.engines.base import Engine
from socbench.engines.settings import EngineSettings

_LOCK = threading.Lock()
_ENGINES: dict[str, Engine] = {}


def get_engine(settings: EngineSettings) -> Engine:
    """The engine for these settings, made on first call."""
    from socbench.engines.registry import create_engine

    key = settings.model_dump_json()
    with _LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = create_engine(settings.api_type, settings.model,
                                          settings=settings.backend_options(), cache_dir=settings.cache_dir,
                                          cache_store=settings.cache_store)
        return _ENGINES[key]


def register_engine(settings: EngineSettings, engine: Engine) -> None:
    """Use ``engine`` for runs with these settings (an already started backend, a test's own); closed by
    ``close_engines`` like any other."""
    with _LOCK:
        _ENGINES[settings.model_dump_json()] = engine


def close_engines() -> int:
    """Tear down every engine; idempotent. Returns how many were open. All are closed even if one
    fails; then the first failure is raised."""
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
