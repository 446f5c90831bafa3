"""One validated run configuration, built the same way by the CLI and by the Prefect flows.

Every setting is checked here, so a bad value fails with one line naming the setting
before any model is loaded.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from socbench.errors import ConfigError
from socbench.types import SamplingSettings

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEMO_DATA_DIR = PROJECT_ROOT / "data" / "demo" / "Dataset_all"
DEFAULT_MODEL = "smollm2-135m-instruct"
API_TYPES = ("vllm", "config", "hf")


class RunConfig(BaseModel):
    """What one ISSP run needs; field names are the seed's CLI flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = DEMO_DATA_DIR
    output_dir: Path = Path("results")
    domain_id: int | str = "all"
    start_domain_id: int | None = None
    interview_count: int | Literal["all"] = "all"
    dataset_size: int = 500
    api_type: Literal["vllm", "config", "hf"] = "vllm"
    model: str = DEFAULT_MODEL
    api_base: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrent_requests: int = 64
    request_timeout_s: float = 60.0
    engine: dict[str, Any] = {}
    mode: Literal["generate", "logprobs"] = "generate"
    structured: bool | None = None
    seed: int = 42
    shuffle_options: bool = False
    include_persona: bool = True
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 64
    cache_dir: Path | None = None
    circular: Literal["circular", "all_possible"] | None = None
    max_variants: int | None = None

    @field_validator("interview_count", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "all":
            return "all"
        if isinstance(value, str) and not value.strip().isdigit():
            raise ValueError(f"expected a positive integer or 'all', got {value!r}")
        if int(value) < 1:
            raise ValueError(f"expected a positive integer or 'all', got {value!r}")
        return int(value)

    @field_validator("api_base")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for url in value.split(","):
            parsed = urlparse(url.strip())
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise ValueError(f"{url.strip()!r} is not an http(s) URL")
        return value

    @field_validator("dataset_size", "concurrent_requests", "max_tokens", "max_variants")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"must be a positive integer, got {value}")
        return value

    @property
    def use_structured(self) -> bool:
        """Constrained JSON is on by default for every backend that has it (vLLM, OpenAI-compatible
        servers): small models need it, and both send the same regex."""
        if self.structured is not None:
            return self.structured
        return self.api_type in ("vllm", "config")

    @property
    def run_name(self) -> str:
        """The model, plus the variant when it is not the default, so runs never overwrite
        each other: ``<model>-logprobs``, ``<model>-no_persona``, ``<model>-shuffled``."""
        parts = [self.model]
        if self.mode == "logprobs":
            parts.append("logprobs")
        if not self.include_persona:
            parts.append("no_persona")
        if self.shuffle_options:
            parts.append("shuffled")
        return "-".join(parts)

    @property
    def sampling(self) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_p, self.max_tokens, None)

    @property
    def engine_cache_dir(self) -> Path:
        """The engine cache lives beside the results (prompts and answers stay under output_dir)."""
        return self.cache_dir or self.output_dir / ".cache"

    def fingerprint(self) -> str:
        """Hash of the settings that change answers (for task cache keys)."""
        keep = self.model_dump(mode="json", exclude={"output_dir", "concurrent_requests",
                                                     "request_timeout_s", "api_key_env", "cache_dir",
                                                     "start_domain_id", "domain_id"})
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def make_config(**params: Any) -> RunConfig:
    """Build a RunConfig from flags/parameters; a bad value is one ConfigError line."""
    clean = {k: v for k, v in params.items() if v is not None}
    if clean.get("api_type") == "config" and not clean.get("api_base"):
        raise ConfigError("--api_type config needs --api_base URL (an OpenAI-compatible server)")
    try:
        return RunConfig(**clean)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "config"
        value = err.get("input")
        raise ConfigError(f"--{field} {value!r}: {err['msg'].removeprefix('Value error, ')}") from None
