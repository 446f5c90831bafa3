"""In-process engines shared by a test session: vLLM started once per model and settings, not per test.

Why: each start of vLLM on the tiny model costs ~30 CPU seconds. While ``EnginePool.installed()``
is active, socbench's engine registry hands a flow that asks for a ``vllm`` engine the pool's one
for the same model and settings, behind a ``Kept`` view whose ``close()`` leaves it open: the flow's
teardown still closes what the flow opened (its engine cache), and the pool closes the engines at the
session's end. Only the model is shared; each run keeps its own cache, so "a rerun sends nothing"
is still measured on the run's own cache.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from socbench.engines import registry


def _parallel_state_up() -> bool:
    """Whether vLLM's model-parallel groups (one per process, shared by every in-process engine) exist:
    a test that starts and closes an engine of its own can leave a pooled engine without them."""
    from vllm.distributed import parallel_state

    return parallel_state.model_parallel_is_initialized()


class Kept:
    """A pooled engine as a flow sees it: everything but ``close()``, which the pool does."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def close(self) -> None:
        """Left open for the next test; ``EnginePool.close`` closes it."""


class EnginePool:
    """One engine per (backend, model folder, settings), made on first use through the registry's
    own factory, so it is exactly the engine a run would start."""

    def __init__(self) -> None:
        self.factories = dict(registry._FACTORIES)
        self.engines: dict[tuple[str, str, str], Any] = {}

    def get(self, api_type: str, model: str | Path, settings: dict[str, Any] | None = None) -> Kept:
        """The pool's engine (made now if new); ``settings`` as ``--engine`` gives them."""
        folder = Path(model).resolve() if Path(model).exists() else model
        key = (api_type, str(folder), json.dumps(settings or {}, sort_keys=True, default=str))
        if key in self.engines and api_type == "vllm" and not _parallel_state_up():
            self.engines.pop(key).close()  # another engine's shutdown tore vLLM's process-wide state down
        if key not in self.engines:
            self.engines[key] = self.factories[api_type](str(model), dict(settings or {}))
        return Kept(self.engines[key])

    @contextlib.contextmanager
    def installed(self, *api_types: str) -> Iterator[EnginePool]:
        """While inside, runs in this process get their ``api_types`` engines (default: vLLM) here."""
        kinds = api_types or ("vllm",)
        previous = {kind: registry._FACTORIES[kind] for kind in kinds}
        for kind in kinds:
            registry._FACTORIES[kind] = lambda model, settings, _kind=kind: self.get(_kind, model, settings)
        try:
            yield self
        finally:
            registry._FACTORIES.update(previous)

    def close(self) -> None:
        engines, self.engines = list(self.engines.values()), {}
        for engine in engines:
            engine.close()
