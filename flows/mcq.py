"""CP vs MCP as a Prefect flow: composition only, one line per stage.

load -> prompts -> engine (cached, retried) -> score -> report; the engine is torn down
in ``finally`` whatever happens. With ``circular``, the MCP variants join the engine call
and are scored and reported beside the normal results. ``socbench mcq`` runs the same flow
in-process.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow

from socbench.config import DEFAULT_MODEL
from socbench.mcq.config import McqConfig, make_mcq_config
from tasks.mcq_engine import mcq_engine
from tasks.mcq_load import mcq_load
from tasks.mcq_prompts import mcq_circular_prompts, mcq_prompts
from tasks.mcq_report import mcq_report
from tasks.mcq_score import mcq_circular_score, mcq_score
from tasks.teardown import teardown_safely


@flow(name="mcq", persist_result=True)
def mcq(
    dataset: str = "arc-easy",
    method: str | list[str] = "cp,mcp",
    k_shot: str | list[int] = "0",
    tolerance: bool = False,
    api_type: str = "auto",
    model: str = DEFAULT_MODEL,
    engine: dict[str, Any] | None = None,
    limit: int | None = None,
    seed: int = 1234,
    output_dir: str = "results",
    cache_dir: str | None = None,
    circular: str | None = None,
    max_variants: int | None = None,
) -> dict:
    """CP-RAW/UN/LN and MCP(-Tolerance) accuracies for each k (and with ``circular``
    (circular | all_possible) MCP's circular metrics); the files' paths."""
    config = make_mcq_config(**{k: v for k, v in locals().items()})
    return run_mcq(config)


def run_mcq(config: McqConfig) -> dict:
    """The flow's body, shared with the CLI's in-process run."""
    started = time.time()
    try:
        data = mcq_load(config)
        plan = mcq_prompts(data, config)
        circular = mcq_circular_prompts(data, plan, config) if config.circular else None
        answers = mcq_engine(plan, config, circular)
        predictions = mcq_score(plan, answers)
        variants = mcq_circular_score(circular, answers) if circular is not None else None
        return mcq_report(data, plan, answers, predictions, config, started, circular, variants)
    finally:
        teardown_safely()


def mcq_inprocess(config: McqConfig) -> dict:
    """Run the ``mcq`` flow in this process (ephemeral Prefect, no server); its outcome."""
    state = mcq(**config.model_dump(mode="json"), return_state=True)
    outcome = state.result(raise_on_failure=False)
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
