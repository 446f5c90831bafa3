"""Run configurations, each declared once: the CLI's flags, the flows' parameters and the library's
arguments are these pydantic models, so a bad value fails with one line naming its flag before any model
loads. On the command line settings are flat (``--model``): ``settings_of`` lists them, ``from_flat``
nests them back. Why not pydantic-settings' CLI (in the lock): built over ``RunConfig`` it names the engine's
flags ``--engine.model``, shows types as metavars (``{float,null}``), has no kebab-case twins and its own
error lines; cyclopts (also in the lock) nests them as ``--config.engine.model`` and draws help in rich
panels. Either would change every command's flags, help and errors."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from socbench.domains import study_name
from socbench.engines.settings import EngineSettings
from socbench.errors import ConfigError, validated
from socbench.types import CircularSettings, Mode, Pick, SamplingSettings

EXPORT_FORMATS = ("csv", "parquet", "dta", "sav")  # socbench export / --export
ExportFormat = Literal["csv", "parquet", "dta", "sav"]


@dataclass(frozen=True)
class Setting:
    """One flat setting: its flag name, its path in the record (field names), its field, and its default as
    ``--help`` shows it (a nested record's field: its parent record's; ``McqConfig``'s engine: ``auto``)."""

    name: str
    path: tuple[str, ...]
    field: FieldInfo
    default: Any


@functools.cache
def settings_of(model: type[BaseModel]) -> dict[str, Setting]:
    """Every setting of ``model`` by flag name; fields of nested records are flattened."""
    found: dict[str, Setting] = {}
    for name, field in model.model_fields.items():
        inner, default = field.annotation, field.get_default(call_default_factory=True)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            entries = [Setting(s.name, (name, *s.path), s.field, s.default if default is None else
                               functools.reduce(lambda v, part: getattr(v, part, None), s.path, default))
                       for s in settings_of(inner).values()]
        else:  # its own name, or its last alias: ``engine_args`` is the original system's ``--engine``
            alias = field.validation_alias
            flag = str(alias.choices[-1]) if isinstance(alias, AliasChoices) else name
            entries = [Setting(flag, (name,), field, default)]
        for entry in entries:
            if entry.name in found:
                raise TypeError(f"{model.__name__}: two settings named {entry.name!r}")
            found[entry.name] = entry
    return found


def from_flat(model: type[BaseModel], values: dict[str, Any]) -> Any:
    """``model`` from flat settings (flags or keyword arguments; None means the default)."""
    known = {**{s.path[-1]: s for s in settings_of(model).values()}, **settings_of(model)}
    nested: dict[str, Any] = {}
    for key, value in values.items():
        setting = known.get(key.replace("-", "_"))
        if setting is None:
            raise ConfigError(f"--{key}: unknown setting")
        if value is None:
            continue
        target = functools.reduce(lambda level, part: level.setdefault(part, {}), setting.path[:-1], nested)
        target[setting.name] = value  # keyed by the flag's name, so an error names that flag
    return validated(model, nested)


def comma_list(value: Any) -> Any:
    """``"cp,mcp"`` / ``"0,1,5"`` / ``[0, 1]`` / ``5`` -> a list of stripped parts (other values as given)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (int, float)):
        return [value]
    return value


def positive(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise ValueError(f"must be a positive integer, got {value}")
    return value


def count_or_all(value: Any) -> int | str:
    """A positive count, or ``all`` (every respondent): ``--dataset_size``, ``--interview_count``, the
    import's ``--sizes``."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    if isinstance(value, str) and not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"expected a positive integer or 'all', got {value!r}")
    return int(value)


def max_variants_needs_all_possible(config: Any) -> Any:
    """``--max_variants`` samples ``all_possible`` orders; anywhere else it would be ignored."""
    if config.max_variants is not None and config.circular != "all_possible":
        raise ConfigError("--max_variants applies only with --circular all_possible "
                          "(circular asks the n rotations)")
    if getattr(config, "circular_labels", "order_only") != "order_only" and config.circular is None:
        raise ConfigError(f"--circular_labels {config.circular_labels} applies only with --circular "
                          "circular|all_possible")
    return config


class EngineRun(BaseModel):
    """A run that writes to ``output_dir`` and asks ``engine``. The cache defaults to ``<output_dir>/.cache``
    (answers beside results), filled in when built and left out when written, so changing ``output_dir``
    in a flow's form moves the cache with it. ``dry_run``: see ``socbench.cost``. Every run's record is frozen
    and takes no unknown setting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dry_run: bool = Field(False, description="print the requests and prompt tokens each unit would send "
                                             "(their cost, given prices); send and write nothing")
    price_prompt: float | None = Field(None, ge=0, description="with --dry_run: the price of 1M prompt "
                                                               "tokens")
    price_completion: float | None = Field(None, ge=0, description="with --dry_run: the price of 1M "
                                                                   "completion tokens")
    price_batch_discount: float = Field(0.5, ge=0, le=1, description="with --dry_run --batch: the batch "
                                        "price as a share of the prices given (OpenAI's Batch API: 0.5)")

    @model_validator(mode="after")
    def _prices_need_dry_run(self) -> Any:
        price = next((f for f in ("price_prompt", "price_completion") if getattr(self, f) is not None), None)
        if price and not self.dry_run:
            raise ConfigError(f"--{price} applies only with --dry_run (it prices the requests a run would "
                              "send)")
        return self

    @model_validator(mode="before")
    @classmethod
    def _cache_beside_results(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        output_dir = data.get("output_dir") or cls.model_fields["output_dir"].default
        engine = data.get("engine") or {}
        cache_dir = Path(output_dir) / ".cache"
        if isinstance(engine, EngineSettings) and engine.cache_dir is None:
            engine = engine.model_copy(update={"cache_dir": cache_dir})
        elif isinstance(engine, dict) and engine.get("cache_dir") is None:  # a str: JSON input takes no Path
            engine = {**engine, "cache_dir": str(cache_dir)}
        return {**data, "engine": engine}

    @model_serializer(mode="wrap")
    def _derived_cache_dir_unset(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and self.engine.cache_dir == Path(self.output_dir) / ".cache":
            data["engine"] = {**data["engine"], "cache_dir": None}
        return data


class RunConfig(EngineRun):
    """What one ISSP run needs; field names are the original system's CLI flags."""

    domain_id: int | str = Field("all",
                                 description="domain id or slug (the manifest's, else 1-4, 6-11) or 'all'")
    start_domain_id: int | None = Field(None, description="with --domain_id all: start at this domain")
    interview_count: int | Literal["all"] = Field("all", description="respondents per domain: N or 'all'")
    interview_sample: Literal["stratified", "first"] = Field(
        "stratified", description="with --interview_count N: stratified: a seeded sample stratified by "
                                  "country (the same for every model and rerun); first: the first N in file "
                                  "order (the original system's)")
    dataset_size: int | Literal["all"] = Field(
        500, description="sample size: reads A_GroundTruth_sampling<N>; all: every respondent (data import "
                         "--sizes all)")
    data_dir: Path | None = Field(None, description="a SocioBench Dataset_all folder "
                                                    "(default: the demo data)")
    output_dir: Path = Field(Path("results"), description="results go to <output_dir>/<run name>/")
    engine: EngineSettings = EngineSettings()
    mode: Mode = Field(
        "generate", description="generate: the model writes {\"answer\": code}; logprobs: the most likely "
                                "offered code after {\"answer\": \"; verbalized: the model states the "
                                "percentage of such people choosing each option (JSON)")
    verbalized_answer: Pick = Field(
        "mode", description="with --mode verbalized: an item's answer is its option with most mass (mode; "
                            "ties: the first in survey order) or a draw from the stated shares seeded by "
                            "(--seed, item) (draw); recorded")
    structured: bool | None = Field(None, description="constrain answers to {\"answer\": code} (default: on "
                                                      "for vllm)")
    seed: int = Field(42, description="run seed: option shuffling and circular samples")
    shuffle_options: bool = Field(False, description="shuffle options, seeded per (seed, person, question); "
                                                     "recorded")
    no_persona: bool = Field(False, description="control run: leave the persona out of the prompt")
    temperature: float = Field(0.0, ge=0, description="sampling temperature")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling mass")
    max_tokens: int = Field(64, description="tokens per generated answer")
    circular: Literal["circular", "all_possible"] | None = Field(
        None, description="re-ask every item with its options rotated (circular) or in all orders")
    max_variants: int | None = Field(None, description="with --circular all_possible: ask N orders per item "
                                                       "(its n rotations plus a seeded sample of others) "
                                                       "where it has more")
    circular_labels: Literal["order_only", "relabel"] = Field(
        "order_only", description="with --circular: order_only keeps each code with its text (order bias); "
                                  "relabel numbers options 1..n by position (label and order bias, as "
                                  "OpenCompass)")
    samples: int = Field(1, ge=1, description="ask each item K times (needs --temperature > 0; draw k "
                                              "seeded seed + k): modal answer scored, K-draw distribution, "
                                              "agreement")
    export: tuple[ExportFormat, ...] = Field(
        (), description="at the end of the run, export its answers (socbench export) in these formats, "
                        "comma-separated: csv,parquet,dta,sav; into <run folder>/export/")
    export_wide: bool = Field(False, description="with --export: the survey's own shape and labels (socbench "
                                                 "export --wide; a domain from socbench data import)")
    unit: Literal["respondent", "group"] = Field(
        "respondent", description="respondent: each respondent asked in their persona; group: one request "
                                  "per group x question for the group's answer distribution")
    groups: tuple[str, ...] = Field((), description="with --unit group: the attributes (or roles: sex, age, "
                                                    "...) that define a group, comma-separated (default: the "
                                                    "study's roles)")
    min_group_size: int = Field(30, ge=1, description="with --unit group: a group x question with fewer "
                                                      "answers is left out and counted")
    allow_remote_data: bool = Field(
        False, description="send prompts of a study with data_use: local (imported microdata) to a server "
                           "not on loopback or a private network: acknowledges that its licence allows it")

    _count = field_validator("interview_count", "dataset_size", mode="before")(count_or_all)
    _groups = field_validator("groups", mode="before")(comma_list)
    _formats = field_validator("export", mode="before")(lambda value: tuple(dict.fromkeys(comma_list(value))))
    _positive = field_validator("max_tokens", "max_variants")(positive)
    _max_variants = model_validator(mode="after")(max_variants_needs_all_possible)

    @model_validator(mode="after")
    def _samples(self) -> RunConfig:
        """Repeated draws need sampling, one expansion at a time; a verbalized answer is one distribution."""
        if self.samples > 1 and self.temperature <= 0:
            raise ValueError(f"--samples {self.samples} needs --temperature > 0 (at 0 every draw is alike)")
        if self.samples > 1 and (self.circular is not None or self.mode != "generate"):
            raise ValueError(f"--samples {self.samples}: not with --circular or --mode {self.mode}")
        if self.mode == "verbalized" and self.circular is not None:
            raise ValueError("--mode verbalized: not with --circular (a distribution has no option order to "
                             "rotate)")
        if self.verbalized_answer != "mode" and self.mode != "verbalized":
            raise ValueError("--verbalized_answer applies only to --mode verbalized")
        return self

    @model_validator(mode="after")
    def _group_unit(self) -> RunConfig:
        """A group is asked for a distribution once: no per-respondent variants, and its flags need it."""
        if self.unit == "respondent":
            named = next((f for f in ("groups", "min_group_size")  # by value: a deployment passes every field
                          if getattr(self, f) != type(self).model_fields[f].default), None)
            if named:
                raise ValueError(f"--{named} applies only with --unit group")
        elif (self.mode == "logprobs" or self.circular or self.samples > 1 or self.shuffle_options
              or self.no_persona or self.export):
            raise ValueError("--unit group asks each group once for a stated distribution, scored in its "
                             "unit record: not with --mode logprobs, --circular, --samples, "
                             "--shuffle_options, --no_persona or --export")
        return self

    @property
    def dataset_dir(self) -> Path:
        """``data_dir``, or the demo data (None in the record: no path of this machine in a deployment): the
        checkout's ``data/demo``, installed as ``socbench._demo``."""
        import socbench._demo

        return self.data_dir or Path(next(iter(socbench._demo.__path__))) / "Dataset_all"

    def data_record(self) -> dict[str, Any]:
        """What ``summary.json`` records of the data: which respondents, the study's name, and the licensed
        studies sent to another host (``socbench.data_use``)."""
        from socbench.data_use import remote_data
        from socbench.domains import select_domains

        domains = select_domains(self.domain_id, self.start_domain_id, self.dataset_dir)
        sent = remote_data(self.engine_settings(), self.dataset_dir, domains)
        return {"data_dir": str(self.dataset_dir.expanduser().resolve()), "dataset_size": self.dataset_size,
                "interview_count": self.interview_count, "interview_sample": self.interview_sample,
                "study": study_name(self.dataset_dir),
                **({"sent_remote": {**sent, "acknowledged": "--allow_remote_data"}} if sent else {})}

    @property
    def include_persona(self) -> bool:
        return not self.no_persona

    def engine_settings(self) -> EngineSettings:
        """The engine record with ``auto`` resolved: logprobs mode is scoring, generate is generation."""
        from socbench.engines.settings import resolve_engine

        return resolve_engine(self.engine, "scoring" if self.mode == "logprobs" else "generation")

    @property
    def use_structured(self) -> bool:
        """On by default where the backend has it (vLLM, OpenAI-compatible servers): small models need it."""
        return self.structured if self.structured is not None else \
            self.engine_settings().api_type in ("vllm", "openai")

    @property
    def run_name(self) -> str:
        """The model plus each variant that is not the default (``-logprobs``, ``-verbalized``, ``-draw``,
        ``-no_persona``, ``-shuffled``, ``-group``), so runs never overwrite each other."""
        variants = {"logprobs": self.mode == "logprobs", "verbalized": self.mode == "verbalized",
                    "draw": self.verbalized_answer == "draw", "no_persona": self.no_persona,
                    "shuffled": self.shuffle_options, "group": self.unit == "group"}
        return "-".join([self.engine.model, *(name for name, on in variants.items() if on)])

    @property
    def sampling(self) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_p, self.max_tokens, None)

    @functools.cached_property
    def expansion(self) -> CircularSettings | None:
        """How items expand into variants (None: one request per item); read once, here."""
        return None if self.circular is None else CircularSettings(
            self.circular, self.max_variants, self.seed, self.shuffle_options, self.circular_labels)


def make_config(**params: Any) -> RunConfig:
    """A RunConfig from flat settings (as the CLI's flags); a bad value is one ConfigError line."""
    return from_flat(RunConfig, params)
