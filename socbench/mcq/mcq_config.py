"""One validated ``socbench mcq`` run configuration: the CLI's flags and the flow's parameter."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from socbench.config import EngineRun, comma_list, max_variants_needs_all_possible, positive
from socbench.engines.settings import BackendChoice, EngineSettings, choose_backend, resolve_engine
from socbench.mcq.prompts import MAX_SHOTS
from socbench.types import CircularSettings

METHOD_NAMES = ("cp", "mcp")


class McqConfig(EngineRun):
    """What one CP-vs-MCP run needs; field names are the CLI flags."""

    dataset: str = Field("arc-easy", description="arc-easy, arc-challenge, mmlu or an ARC-format JSONL file")
    method: tuple[Literal["cp", "mcp"], ...] = Field(
        METHOD_NAMES, description="comma-separated: cp (CP-RAW/UN/LN) and/or mcp")
    k_shot: tuple[int, ...] = Field((0,), description="comma-separated shot counts, e.g. 0,1,5 (shots drawn "
                                                      "from another split)")
    tolerance: bool = Field(False, description="also score MCP-Tolerance (naming an option's digit counts "
                                               "as choosing it)")
    engine: EngineSettings = EngineSettings(api_type="auto")  # transformers on a CPU host (choose_backend)
    limit: int | None = Field(None, description="evaluate only the first N items")
    seed: int = Field(1234, description="few-shot draw seed")
    output_dir: Path = Field(Path("results"), description="results go to <output_dir>/<model>/mcq/")
    circular: Literal["circular", "all_possible"] | None = Field(
        None, description="also ask MCP with each item's options rotated (or in all orders); CP is skipped")
    max_variants: int | None = Field(None, description="with --circular all_possible: a seeded sample of N "
                                                       "orders per item")

    @field_validator("method", mode="before")
    @classmethod
    def _methods(cls, value: Any) -> Any:
        parts = [str(p).strip().lower() for p in comma_list(value)]
        if not parts:
            raise ValueError(f"choose one or more of {','.join(METHOD_NAMES)}")
        return tuple(m for m in METHOD_NAMES if m in parts) if set(parts) <= set(METHOD_NAMES) else parts

    @field_validator("k_shot", mode="before")
    @classmethod
    def _shots(cls, value: Any) -> Any:
        parts = comma_list(value)
        if not parts or any(not str(p).strip().isdigit() or int(p) > MAX_SHOTS for p in parts):
            raise ValueError(f"expected comma-separated shot counts from 0 to {MAX_SHOTS}, e.g. 0,1,5")
        return tuple(sorted({int(p) for p in parts}))

    _positive = field_validator("limit", "max_variants")(positive)
    _max_variants = model_validator(mode="after")(max_variants_needs_all_possible)

    @model_validator(mode="before")
    @classmethod
    def _auto_backend(cls, data: Any) -> Any:
        """CP vs MCP picks its backend per host unless one is named (``engines.settings.choose_backend``)."""
        if not isinstance(data, dict):
            return data
        engine = data.get("engine")
        if engine is None or (isinstance(engine, dict) and "api_type" not in engine):
            return {**data, "engine": {**(engine or {}), "api_type": "auto"}}
        if isinstance(engine, EngineSettings) and "api_type" not in engine.model_fields_set:
            return {**data, "engine": engine.model_copy(update={"api_type": "auto"})}
        return data

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty: give arc-easy, arc-challenge, mmlu or a JSONL file")
        return value.strip()

    @functools.cached_property
    def expansion(self) -> CircularSettings | None:
        """How MCP items are expanded (seeded by ``seed``), or None without ``--circular``."""
        return CircularSettings(self.circular, self.max_variants, self.seed) if self.circular else None

    def backend_choice(self) -> BackendChoice:
        """The backend this run uses: the engine's ``api_type``, or with ``auto`` the pick for
        scoring on this host (recorded in the results)."""
        return choose_backend(self.engine.api_type, "scoring")

    def engine_settings(self) -> EngineSettings:
        """The engine record with ``auto`` resolved (what the engine session is keyed on)."""
        return resolve_engine(self.engine, "scoring")

