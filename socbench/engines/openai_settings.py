"""How to reach an OpenAI-compatible server (``--api_base``, timeouts, retries, ``--batch``): the settings
the transport (``_http``), the Batch API (``batch``) and the engine (``openai_api``) all read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from socbench.errors import ConfigError


def api_bases(value: str | Sequence[str]) -> tuple[str, ...]:
    """``--api_base``'s URLs (comma-separated), checked, without a trailing ``/v1``: its one reading."""
    urls = [u.strip() for u in (value.split(",") if isinstance(value, str) else value) if u.strip()]
    if not urls:
        raise ConfigError("--api_base: no URL given (expected http(s)://host:port)")
    for url in urls:
        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"--api_base {url!r} is not an http(s) URL")
    return tuple(url.rstrip("/").removesuffix("/v1") for url in urls)


class OpenAISettings(BaseModel):
    """How to reach the server; only ``model`` and ``structured_mode`` change answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base: tuple[str, ...]
    model: str
    api_key: SecretStr | None = None
    concurrent_requests: int = Field(64, ge=1)
    timeout_s: float = Field(60.0, gt=0)  # silence before in-flight requests of a base are retried
    max_request_s: float = Field(600.0, gt=0)  # ceiling for one request, however alive its server
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(6, ge=0)
    backoff_base_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    structured_mode: Literal["regex", "json_schema", "none"] = "regex"
    exact_option_tokens: bool = True
    top_logprobs: int = Field(20, ge=1)
    batch: bool = False  # through the Batch API (batch.py), not one request each
    batch_dir: Path | None = None  # where its batches are recorded: next to the engine cache
    batch_max_requests: int = Field(50_000, ge=1)  # OpenAI's limits per input file
    batch_max_bytes: int = Field(200_000_000, ge=1)
    batch_poll_s: float = Field(30.0, gt=0)  # between two looks at a batch's state
    batch_window: str = "24h"  # completion_window: the only one OpenAI offers

    _urls = field_validator("api_base", mode="before")(api_bases)

