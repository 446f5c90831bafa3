"""The studies socbench runs, each a Task (``socbench.task``): the ISSP benchmark (and any survey imported
with ``data import``) and CP vs MCP on multiple-choice datasets."""

from __future__ import annotations

from typing import Any

from socbench.mcq.config import McqConfig
from socbench.task import Task

__all__ = ["task_for"]


def task_for(config: Any) -> Task:
    """The Task of a run configuration: ``McqConfig`` is CP vs MCP, ``RunConfig`` the ISSP benchmark."""
    if isinstance(config, McqConfig):
        from socbench.studies.mcq import McqTask

        return McqTask(config)
    from socbench.studies.issp import IsspTask

    return IsspTask(config)
