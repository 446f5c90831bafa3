"""CP vs MCP on multiple-choice questions (Robinson et al. 2022): cloze and letter prompting.

Stages: ``load_mcq`` -> ``build_plan`` -> the engine (``socbench.pipeline``) -> ``score_mcq`` (pure) ->
``report.mcq.write_mcq_files``; the records are in ``socbench.mcq.types``. Names load on first use, so
the CLI reads ``socbench.mcq.config`` for its flags without importing scoring and plotting."""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "socbench.mcq.config": ("McqConfig", "make_mcq_config"),
    "socbench.mcq.datasets": ("load_jsonl", "load_mcq"),
    "socbench.mcq.prompts": ("build_plan", "draw_shots", "loglikelihood_requests", "option_requests_of"),
    "socbench.mcq.scoring": ("COLUMNS", "METHODS", "accuracies", "score_mcq",
                             "score_plan"),
    "socbench.mcq.specs": ("TASKS", "McqTaskSpec", "get_task"),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
