"""Inference backends behind one ``Engine`` protocol (``base``), the engine cache and the registry; only
light modules are imported here: backends (and aiohttp, vLLM, torch) load on first use.
"""

from __future__ import annotations

from socbench.engines.cache import CachedEngine, EngineCache
from socbench.engines.registry import create_engine

__all__ = ["CachedEngine", "EngineCache", "create_engine"]
