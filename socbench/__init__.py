"""socbench: how well can an LLM stand in for a real survey respondent?

``socbench.evaluate(task, **settings)`` runs a study (``"issp"``, ``"mcq"``) as the command line does and
returns an ``EvalResult``; every study implements ``socbench.task.Task``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["EvalResult", "Task", "evaluate"]

# name -> module, imported on first use: ``import socbench`` stays light (no Prefect, no model code)
_HOMES = {"evaluate": "socbench.cli.api", "EvalResult": "socbench.cli.api", "Task": "socbench.task"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
