"""Inference backends behind one ``Engine`` protocol, the engine cache and the registry.

Only light modules are imported here; backends (and aiohttp, vLLM, torch) load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from socbench.engines.base import Engine, ResultSink
from socbench.engines.cache import CachedEngine, EngineCache
from socbench.engines.registry import API_TYPES, create_engine

_LAZY = {
    "OpenAIEngine": "socbench.engines.openai_api",
    "OpenAISettings": "socbench.engines.openai_api",
    "resolve_api_key": "socbench.engines.openai_api",
    "VllmEngine": "socbench.engines.vllm",
    "HfEngine": "socbench.engines.hf",
    "VllmSettings": "socbench.engines.settings",
    "HfSettings": "socbench.engines.settings",
}

__all__ = ["API_TYPES", "CachedEngine", "Engine", "EngineCache", "ResultSink", "create_engine", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
