"""API keys from a Prefect Secret block, handed to the engine through the environment: the key never
becomes a flow parameter, a task input or a cache key."""

from __future__ import annotations

import os
from typing import TypeVar

from prefect.blocks.system import Secret

from socbench.config import EngineRun
from socbench.errors import ConfigError

C = TypeVar("C", bound=EngineRun)

SECRET_ENV = "SOCBENCH_API_KEY_FROM_SECRET"  # process-private: loaded on the worker, read by the engine


def with_secret_key(config: C, block_name: str | None) -> C:
    """``config`` with its engine reading the key of the Secret block ``block_name`` (as is without one)."""
    if not block_name:
        return config
    try:
        value = Secret.load(block_name).get()
    except ValueError as exc:
        raise ConfigError(f"--api_key_secret {block_name}: no such Prefect Secret block ({exc})") from None
    os.environ[SECRET_ENV] = str(value)
    engine = config.engine.model_copy(update={"api_key_env": SECRET_ENV})
    return config.model_copy(update={"engine": engine})
