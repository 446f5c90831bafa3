"""One validated ``socbench mcq`` run configuration, built the same way by the CLI and the flow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from socbench.config import DEFAULT_MODEL, RunConfig, make_config
from socbench.engines.choice import BackendChoice, choose_backend
from socbench.errors import ConfigError
from socbench.mcq.prompts import MAX_SHOTS

if TYPE_CHECKING:
    from socbench.circular import CircularSettings

METHOD_NAMES = ("cp", "mcp")


def _csv(value: Any) -> Any:
    """``"cp,mcp"`` / ``"0,1,5"`` / ``[0, 1]`` / ``5`` -> a list of stripped parts."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (int, float)):
        return [value]
    return value


class McqConfig(BaseModel):
    """What one CP-vs-MCP run needs; field names are the CLI flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset: str = "arc-easy"
    method: tuple[Literal["cp", "mcp"], ...] = METHOD_NAMES
    k_shot: tuple[int, ...] = (0,)
    tolerance: bool = False
    api_type: Literal["auto", "vllm", "hf"] = "auto"  # auto: engines.choice picks per method and host
    model: str = DEFAULT_MODEL
    engine: dict[str, Any] = {}
    limit: int | None = None
    seed: int = 1234
    output_dir: Path = Path("results")
    cache_dir: Path | None = None
    circular: Literal["circular", "all_possible"] | None = None
    max_variants: int | None = None

    @field_validator("method", mode="before")
    @classmethod
    def _methods(cls, value: Any) -> Any:
        parts = [str(p).strip().lower() for p in _csv(value)]
        if not parts:
            raise ValueError(f"choose one or more of {','.join(METHOD_NAMES)}")
        return tuple(m for m in METHOD_NAMES if m in parts) if set(parts) <= set(METHOD_NAMES) else parts

    @field_validator("k_shot", mode="before")
    @classmethod
    def _shots(cls, value: Any) -> Any:
        parts = _csv(value)
        if not parts or any(not str(p).strip().isdigit() or int(p) > MAX_SHOTS for p in parts):
            raise ValueError(f"expected comma-separated shot counts from 0 to {MAX_SHOTS}, e.g. 0,1,5")
        return tuple(sorted({int(p) for p in parts}))

    @field_validator("limit")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"must be a positive integer, got {value}")
        return value

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty: give arc-easy, arc-challenge, mmlu or a JSONL file")
        return value.strip()

    def circular_settings(self) -> CircularSettings | None:
        """How MCP items are expanded (seeded by ``seed``), or None without ``--circular``."""
        from socbench.circular import CircularSettings

        if self.circular is None:
            if self.max_variants is not None:
                raise ConfigError("--max_variants applies only with --circular all_possible")
            return None
        return CircularSettings(self.circular, self.max_variants, self.seed)

    def backend_choice(self) -> BackendChoice:
        """The backend this run uses: ``api_type``, or with ``auto`` the pick for scoring on this host."""
        return choose_backend(self.api_type, "scoring")

    def run_config(self) -> RunConfig:
        """The engine part as the shared RunConfig, so the session, cache and teardown are the ISSP ones."""
        return make_config(api_type=self.backend_choice().chosen, model=self.model, engine=self.engine,
                           output_dir=self.output_dir, cache_dir=self.cache_dir)


def make_mcq_config(**params: Any) -> McqConfig:
    """An McqConfig from flags or flow parameters; a bad value is one ConfigError line."""
    clean = {k: v for k, v in params.items() if v is not None}
    try:
        config = McqConfig(**clean)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "config"
        message = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"--{field} {err.get('input')!r}: {message}") from None
    config.circular_settings()  # --circular/--max_variants combinations fail here, as one line
    return config
