"""Inference backends behind one ``Engine`` protocol, the engine cache and the registry; only light
modules are imported here: backends (and aiohttp, vLLM, torch) load on first use.
"""

from __future__ import annotations

from socbench.engines.base import Engine, ResultSink
from socbench.engines.cache import CachedEngine, EngineCache
from socbench.engines.registry import API_TYPES, create_engine

__all__ = ["API_TYPES", "CachedEngine", "Engine", "EngineCache", "ResultSink", "create_engine"]
