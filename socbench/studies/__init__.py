"""The studies socbench runs, each a Task (``socbench.task``), registered once in ``STUDIES``: its name (the
CLI's sub-command, ``socbench.evaluate``'s first argument, the results log's ``task``), its configuration
record, its Task and its Prefect flow (the generic ``socbench.flows.generic`` unless it names its own). The
CLI, ``socbench.evaluate`` and the flows read this table; a new study is its module (``studies.generic`` gives
it every stage but four) plus an entry here. Entries name their classes as ``module:attribute`` and are
imported when used, so that listing the studies imports none of them."""

from __future__ import annotations

from dataclasses import dataclass
from pkgutil import resolve_name
from typing import Any

from socbench.errors import ConfigError
from socbench.task import Task

__all__ = ["STUDIES", "Study", "study", "study_of", "task_for"]


@dataclass(frozen=True)
class Study:
    """One study: where its configuration, Task and flow are, and its CLI help."""

    name: str
    config: str  # "module:Class" of its configuration record (the CLI's flags, the flow's parameter)
    task: str  # "module:Class" of its Task
    help: str
    flow: str = "socbench.flows.generic:study"  # "module:function" of its Prefect flow: the generic one
    description: str | None = None
    by_unit: tuple[tuple[str, str], ...] = ()  # (config.unit, "module:Class"): another Task for that unit

    def config_type(self) -> type:
        return resolve_name(self.config)

    def flow_function(self) -> Any:
        return resolve_name(self.flow)


STUDIES: dict[str, Study] = {s.name: s for s in (
    Study("issp", "socbench.config:RunConfig", "socbench.studies.issp:IsspTask",
          flow="socbench.flows.issp:issp",  # its deployments' flow names
          by_unit=(("group", "socbench.studies.issp_group:IsspGroupTask"),),
          help="run the ISSP persona benchmark (issp prompts: print its prompts)",
          description="Run the ISSP persona benchmark through the Prefect flow in this process. "
                      "`socbench issp prompts --help`: print prompts instead."),
    Study("mcq", "socbench.mcq.mcq_config:McqConfig", "socbench.studies.mcq:McqTask",
          flow="socbench.flows.mcq:mcq",
          help="CP vs MCP on multiple-choice questions (ARC, MMLU or a JSONL file)"),
)}


def study(name: str) -> Study:
    """The registered study ``name``; a ConfigError naming the known ones otherwise."""
    if name not in STUDIES:
        raise ConfigError(f"task {name!r}: expected one of {', '.join(STUDIES)}")
    return STUDIES[name]


def study_of(config: Any) -> Study:
    """The study whose configuration record ``config`` is."""
    kind = f"{type(config).__module__}:{type(config).__qualname__}"
    found = next((s for s in STUDIES.values() if s.config == kind), None)
    if found is None:
        raise TypeError(f"{kind} is no registered study's configuration (socbench.studies.STUDIES)")
    return found


def task_for(config: Any) -> Task:
    """The Task of a run configuration: the one its ``unit`` names (``Study.by_unit``), else the study's."""
    found = study_of(config)
    return resolve_name(dict(found.by_unit).get(getattr(config, "unit", ""), found.task))(config)
