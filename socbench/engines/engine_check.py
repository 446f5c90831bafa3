"""Backend settings checked by the backend's own rules before weights load or Prefect starts.

vLLM builds its ``VllmConfig`` from ``--engine`` and the model's ``config.json`` (no weights;
seconds), so a model that cannot take the settings is one line with vLLM's reason rather than
tracebacks after a minute; transformers' dtype, device and threads are checked against torch.
Both return the context length prompts are measured against.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from socbench.engines.settings import HfSettings, VllmSettings, apply_vllm_env, cuda_available
from socbench.engines.vllm_args import vllm_version
from socbench.errors import ConfigError, first_problem
from socbench.models import ResolvedModel

log = logging.getLogger("socbench")

# ``vllm.LLM`` turns these dict arguments into vLLM config objects before ``EngineArgs``
_CONFIG_OBJECTS = {"structured_outputs_config": "StructuredOutputsConfig",
                   "profiler_config": "ProfilerConfig",
                   "attention_config": "AttentionConfig", "kv_transfer_config": "KVTransferConfig",
                   "compilation_config": "CompilationConfig"}


def llm_kwargs(settings: VllmSettings) -> dict[str, Any]:
    """What ``vllm.LLM`` gets besides the model, socbench's CPU kernels included; after
    ``apply_vllm_env`` (it imports vLLM)."""
    kwargs = settings.engine_kwargs()
    if settings.in_process and not cuda_available():  # see _vllm_cpu: same bits, faster
        from socbench.engines import _vllm_cpu

        kwargs.update(_vllm_cpu.register(settings.cpu_threads))
    return kwargs


def _engine_args(model: ResolvedModel, kwargs: dict[str, Any]):
    """``EngineArgs`` as ``vllm.LLM.__init__`` builds them (its dict arguments made config objects)."""
    import vllm.config
    from vllm.config.compilation import CompilationMode
    from vllm.engine.arg_utils import EngineArgs

    kwargs = dict(kwargs)
    for name, cls_name in _CONFIG_OBJECTS.items():
        value = kwargs.get(name)
        if name == "compilation_config" and isinstance(value, int):
            kwargs[name] = vllm.config.CompilationConfig(mode=CompilationMode(value))
        elif isinstance(value, dict):
            kwargs[name] = getattr(vllm.config, cls_name)(**value)
    return EngineArgs(model=str(model.path), **kwargs)


def vllm_reason(exc: BaseException) -> str:
    """vLLM's own words for a refusal, one line (pydantic: the first error's message)."""
    with contextlib.suppress(Exception):  # not a pydantic error
        return " ".join(first_problem(exc)[2].split())  # type: ignore[arg-type]
    return " ".join(str(exc).split()) or type(exc).__name__


def check_vllm(model: ResolvedModel, settings: VllmSettings) -> int:
    """vLLM's own configuration for ``model``; its context length (a refusal: one ConfigError line)."""
    apply_vllm_env(settings)
    # building a config logs a dozen INFO/WARNING lines; vLLM re-applies its own logging configuration
    # on the way, so a logger's level would not hold: logging below ERROR is off meanwhile
    logging.disable(logging.WARNING)
    try:
        config = _engine_args(model, llm_kwargs(settings)).create_engine_config()
    except Exception as exc:  # noqa: BLE001 - any refusal of vLLM's is the user's settings
        logging.disable(logging.NOTSET)
        log.debug("vLLM refused the settings", exc_info=True)
        raise ConfigError(f"--engine: vLLM {vllm_version()} refuses these settings for model {model.name}: "
                          f"{vllm_reason(exc)}") from None
    finally:
        logging.disable(logging.NOTSET)
    return int(config.model_config.max_model_len)


def check_hf(model: ResolvedModel, settings: HfSettings) -> int | None:
    """transformers settings against torch (device, dtype, threads) and the model's config; its
    context length (tokens)."""
    import torch
    from transformers import AutoConfig

    device = settings.resolved_device()
    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"--engine device={settings.device!r}: not a torch device "
                          f"({vllm_reason(exc)})") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--engine device={settings.device!r}: this host has no CUDA device (torch "
                          f"{torch.__version__}); use cpu or auto")
    if kind not in ("cpu", "cuda", "mps", "xpu"):
        raise ConfigError(f"--engine device={settings.device!r}: socbench runs transformers on cpu or cuda")
    if kind == "cuda" and settings.dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        raise ConfigError("--engine dtype='bfloat16': this GPU has no bfloat16; use float16 or float32")
    try:
        config = AutoConfig.from_pretrained(model.path)
    except Exception as exc:  # noqa: BLE001 - transformers' reason, one line
        raise ConfigError(f"--model {model.name}: transformers cannot read its config "
                          f"({vllm_reason(exc)})") from None
    return hf_context(config)


def hf_context(config: Any) -> int | None:
    """The model's own context: ``max_position_embeddings`` (or the older names), of the text part;
    None when its config names none."""
    text = getattr(config, "get_text_config", lambda: config)()
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(text, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
