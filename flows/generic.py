"""The Prefect flows of any study that names none of its own (``socbench.studies.Study.flow``): composition
only, the same two bodies as ISSP's and MCQ's, so a new study needs no flow module."""

from __future__ import annotations

from typing import Any

from prefect import flow

from socbench.config import EngineRun
from socbench.flows import run_unit, run_units
from socbench.outcomes import Outcome


@flow(name="study-unit", persist_result=True, flow_run_name="study-unit-{unit_id}")
def study_unit(unit_id: int, config: EngineRun, own_engine: bool = True) -> Any:
    """One unit of the study whose configuration ``config`` is, stage by stage."""
    return run_unit(config, unit_id, own_engine)


@flow(name="study", persist_result=True)
def study(config: EngineRun, api_key_secret: str | None = None) -> Outcome:
    """Every unit of the study on one engine, then its summary; the API key is read as in ``issp``."""
    return run_units(config, study_unit, api_key_secret)
