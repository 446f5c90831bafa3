"""Backend name -> factory; each factory imports its backend (vLLM, torch, aiohttp) only when called."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from socbench.engines.base import Engine
from socbench.engines.cache import CachedEngine, CacheStore, open_store
from socbench.errors import ConfigError, validated
from socbench.models import resolve_model


def _vllm(model: str, settings: dict[str, Any]) -> Engine:
    from socbench.engines.settings import VllmSettings
    from socbench.engines.vllm import VllmEngine

    return VllmEngine(resolve_model(model), VllmSettings.for_host(settings))


def _hf(model: str, settings: dict[str, Any]) -> Engine:
    from socbench.engines.hf import HfEngine
    from socbench.engines.settings import HfSettings

    return HfEngine(resolve_model(model), HfSettings.from_options(settings))


def _openai(model: str, settings: dict[str, Any]) -> Engine:
    from socbench.engines.openai_api import OpenAIEngine, OpenAISettings, resolve_api_key

    if "api_key" not in settings:
        settings["api_key"] = resolve_api_key(settings.pop("api_key_env", None) or "OPENAI_API_KEY")
    settings.pop("api_key_env", None)
    return OpenAIEngine(validated(OpenAISettings, {"model": model, **settings}))


_FACTORIES: dict[str, Callable[[str, dict[str, Any]], Engine]] = {
    "vllm": _vllm, "hf": _hf, "openai": _openai, "config": _openai,
}
API_TYPES = tuple(sorted(_FACTORIES))


def create_engine(api_type: str, model: str, settings: dict[str, Any] | None = None,
                  cache_dir: Path | None = None, cache_store: CacheStore = "sqlite") -> Engine:
    """The backend for ``api_type`` ("config" is the OpenAI-compatible server), cached if ``cache_dir``
    (in ``cache_store``). Loads nothing: backends start on their first request."""
    factory = _FACTORIES.get(api_type)
    if factory is None:
        raise ConfigError(f"--api_type {api_type!r} is not a backend; choose one of {', '.join(API_TYPES)}")
    engine = factory(model, dict(settings or {}))
    if cache_dir is None:
        return engine
    return CachedEngine(engine, open_store(cache_store, Path(cache_dir), engine.identity))
