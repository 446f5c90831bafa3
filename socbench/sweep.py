"""A model sweep: several models over the same domains, cut into deployment runs (one engine load each).
Plain data and decisions, no Prefect, so a Retry dispatches only what is neither done nor running.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from socbench.config import RunConfig
from socbench.engines.cache import CacheStore
from socbench.engines.settings import EngineSettings
from socbench.errors import ConfigError
from socbench.outcomes import BatchRecord
from socbench.types import DomainResult

DEPLOYMENT = re.compile(r"^[^/\s]+/[^/\s]+$")
Pair = tuple[int, int]  # (model index, domain id)


def _check_deployment(value: str) -> str:
    if not DEPLOYMENT.match(value):
        raise ConfigError(f"deployment {value!r}: expected <flow name>/<deployment name>, "
                          "e.g. issp-domains/gpu")
    return value


Deployment = Annotated[str, AfterValidator(_check_deployment)]


class SweepModel(EngineSettings):
    """One model of a sweep: its engine record and where its domains run."""

    api_base: str | list[str] | None = Field(None, description=(
        "OpenAI-compatible base URL(s): a list, or comma-separated; requests go round-robin (openai)"))
    cache_store: CacheStore = Field("segments", description=(
        "engine cache store; segments (the sweep's default) is safe for several workers and hosts"))
    domains_per_run: int | None = Field(None, ge=1, description=(
        "domains per deployment run, each run loading the engine once (default: the sweep's)"))
    deployment: Deployment | None = Field(None, description=(
        "per-domain deployment that runs this model, e.g. issp-domains/gpu (default: the sweep's)"))
    engine_slots: int | None = Field(None, ge=0, description=(
        "slots of the sweep's engine_limit held while this model runs (default: tensor_parallel_size x "
        "pipeline_parallel_size for vllm, 1 for hf, 0 for a server)"))

    @field_validator("api_base", mode="before")
    @classmethod
    def _servers(cls, value: Any) -> Any:
        return ",".join(str(url).strip() for url in value) if isinstance(value, (list, tuple)) else value

    @property
    def slots(self) -> int:
        if self.engine_slots is not None:
            return self.engine_slots
        if self.api_type == "vllm":
            args = self.engine_args
            return int(args.get("tensor_parallel_size", 1)) * int(args.get("pipeline_parallel_size", 1))
        return 1 if self.api_type == "hf" else 0

    def engine(self) -> EngineSettings:
        """The engine record alone (what a run's ``config.engine`` holds)."""
        return EngineSettings.model_validate(self.model_dump(include=set(EngineSettings.model_fields)))


@dataclass(frozen=True)
class SweepUnit:
    """One deployment run: some domains of one model, on one engine."""

    model: int  # index into SweepConfig.models
    domain_ids: tuple[int, ...]
    deployment: str


class SweepConfig(BaseModel):
    """A sweep: the run settings every model shares, the models, and how runs are cut and placed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: RunConfig = Field(default_factory=RunConfig, description=(
        "what every model runs (domains, data, output, mode, sampling); engines are set per model"))
    models: list[SweepModel] = Field(default_factory=lambda: [SweepModel()], min_length=1)
    domains_per_run: int | None = Field(None, ge=1, description=(
        "domains per deployment run (default: all of a model's domains in one run: one engine load)"))
    deployment: Deployment = Field("issp-domains/local", description=(
        "the per-domain deployment runs go to (flow/deployment), e.g. issp-domains/gpu"))
    engine_limit: str | None = Field(None, description=(
        "Prefect global concurrency limit held while an engine runs, e.g. socbench-gpus-{host} "
        "({host}: the worker's SOCBENCH_HOST, else its host name); none: no limit"))

    @field_validator("engine_limit")
    @classmethod
    def _limit(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                value.format(host="h")
            except (KeyError, IndexError, ValueError):
                raise ValueError(f"{value!r}: the only placeholder is {{host}}") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SweepConfig:
        if self.run.engine != EngineSettings(cache_dir=self.run.engine.cache_dir):
            raise ConfigError("run.engine: a sweep sets each engine under models, not under run")
        seen: dict[str, int] = {}
        for index in range(len(self.models)):
            name = self.run_config(index).run_name
            if name in seen:
                raise ConfigError(f"models[{index}]: writes to the same results as models[{seen[name]}] "
                                  f"({name}); give each model its own name or model path")
            seen[name] = index
        return self

    def run_config(self, index: int) -> RunConfig:
        """The run of ``models[index]``: the shared settings with its engine (cache beside the results)."""
        values = self.run.model_dump()
        values["engine"] = self.models[index].engine().model_dump()
        return RunConfig.model_validate(values)

    def units(self, pending: Mapping[int, Sequence[int]]) -> list[SweepUnit]:
        """Each model's pending domains cut into runs of its ``domains_per_run`` (in model order)."""
        size = {m: self.models[m].domains_per_run or self.domains_per_run or max(1, len(ids))
                for m, ids in pending.items()}
        return [SweepUnit(m, tuple(ids[start:start + size[m]]), self.models[m].deployment or self.deployment)
                for m, ids in sorted(pending.items()) for start in range(0, len(ids), size[m])]


@dataclass
class SweepState:
    """Every (model, domain) of a sweep: done (with its result), running, or failed with a reason."""

    results: dict[Pair, DomainResult] = field(default_factory=dict)
    failed: dict[Pair, str] = field(default_factory=dict)
    running: set[Pair] = field(default_factory=set)
    running_runs: list[str] = field(default_factory=list)  # ids of the dispatched runs not over yet

    def pending(self, models: int, domain_ids: Sequence[int]) -> dict[int, list[int]]:
        """What to dispatch: per model, the domains that are neither done nor running."""
        busy = self.results.keys() | self.running
        todo = {m: [d for d in domain_ids if (m, d) not in busy] for m in range(models)}
        return {m: ids for m, ids in todo.items() if ids}


def settle(batches: Iterable[BatchRecord]) -> SweepState:
    """Done: any run of the pair completed. Running: its latest batch is not over. Failed: the rest, with
    the domain run's own message or, when it never finished, its batch's."""
    batches = list(batches)
    state = SweepState(results={(b.model, d.domain_id): d.result for b in batches for d in b.domains
                                if d.completed and d.result is not None},
                       running_runs=[b.run_id for b in batches if not b.final])
    for batch in batches:
        messages = {d.domain_id: d.message for d in batch.domains if not d.completed and d.message}
        for domain_id in batch.domain_ids:
            pair = (batch.model, domain_id)
            if pair in state.results:
                continue
            if not batch.final:
                state.running.add(pair)
                state.failed.pop(pair, None)
            elif pair not in state.running:
                state.failed[pair] = messages.get(domain_id) or batch.message or "did not run"
    return state


def failure_text(config: SweepConfig, failed: Mapping[Pair, str], names: Mapping[int, str]) -> str:
    """One line naming each (model, domain) that did not complete and why."""
    parts = [f"{config.run_config(m).run_name}: {names.get(d, d)} ({d}): {reason}"
             for (m, d), reason in sorted(failed.items())]
    return f"{len(parts)} domain run(s) failed: " + "; ".join(parts)
