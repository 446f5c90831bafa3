"""API keys from a Prefect Secret block, handed to the engine through the environment.

The key never becomes a flow parameter, a task input or a cache key: it is loaded on the
worker and placed in a process-private environment variable that the engine reads.
"""

from __future__ import annotations

import os
from typing import TypeVar

from prefect.blocks.system import Secret

from socbench.config import EngineRun

C = TypeVar("C", bound=EngineRun)

SECRET_ENV = "SOCBENCH_API_KEY_FROM_SECRET"


def api_key_env_from_secret(block_name: str) -> str:
    """Load the Secret block ``block_name``; return the variable name that now holds it."""
    try:
        value = Secret.load(block_name).get()
    except ValueError as exc:
        from socbench.errors import ConfigError

        raise ConfigError(f"--api_key_secret {block_name}: no such Prefect Secret block ({exc})") from None
    os.environ[SECRET_ENV] = str(value)
    return SECRET_ENV


def with_secret_key(config: C, block_name: str | None) -> C:
    """``config`` with its engine reading the key of the Secret block ``block_name`` (as is without one)."""
    if not block_name:
        return config
    engine = config.engine.model_copy(update={"api_key_env": api_key_env_from_secret(block_name)})
    return config.model_copy(update={"engine": engine})
