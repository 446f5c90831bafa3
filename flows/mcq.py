"""CP vs MCP as Prefect flows: composition only, the same stages as every study. A run whose MCP requests
got engine errors ends Failed once its files are written (incomplete: MCP is left out of its table)."""

from __future__ import annotations

from prefect import flow

from socbench.flows import run_unit, run_units
from socbench.mcq.mcq_config import McqConfig
from socbench.outcomes import Outcome

DEFAULT_CONFIG = McqConfig()  # ARC-Easy, CP and MCP, 0-shot, the embedded model


@flow(name="mcq-dataset", persist_result=True, flow_run_name="mcq-dataset-{unit_id}")
def mcq_dataset(unit_id: int, config: McqConfig, own_engine: bool = True) -> object:
    return run_unit(config, unit_id, own_engine)


@flow(name="mcq", persist_result=True)
def mcq(config: McqConfig = DEFAULT_CONFIG, api_key_secret: str | None = None) -> Outcome:
    """CP-RAW/UN/LN and MCP(-Tolerance) accuracies for each k (and with ``circular`` MCP's circular
    metrics); the API key is read as in ``issp``."""
    return run_units(config, mcq_dataset, api_key_secret)
