"""The sweep's tasks: one deployment run per unit, waited for and read back, then one summary per model
and one leaderboard over every run. What happened to each (model, domain) is read back from the flow-run
records: every attempt's dispatched runs (so a Retry sees what earlier attempts finished) and the
``issp-domain`` runs inside them, whose persisted results are the domains' results.
"""

from __future__ import annotations

import dataclasses
import re
import time
from uuid import UUID

from prefect import get_run_logger
from prefect.artifacts import create_table_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId
from prefect.client.schemas.objects import FlowRun
from prefect.deployments import run_deployment
from prefect.runtime import flow_run as current_run

from socbench.outcomes import BatchRecord, DispatchedDomain, SweepOutcome
from socbench.report.html import write_report
from socbench.report.leaderboard import leaderboard_rows
from socbench.report.markdown import write_run_summary
from socbench.sweep import SweepConfig, SweepState, SweepUnit, settle
from socbench.tasks import stage, unsealed

MODEL_TAG = "socbench-model-"
POLL_S = 2.0


def _children(client, parent: UUID) -> list[FlowRun]:
    flow_filter = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent]))
    return client.read_flow_runs(flow_run_filter=flow_filter)


def _message(run: FlowRun) -> str:
    state = run.state
    if state is None or not state.is_final():
        return ""
    return f"{state.name}: {state.message}" if state.message else state.name


def _domain(run: FlowRun) -> DispatchedDomain:
    completed = run.state is not None and run.state.is_completed()
    result = unsealed(run.state.result()) if completed else None
    return DispatchedDomain(int(run.parameters["domain_id"]), completed, _message(run), result)


def _batch(run: FlowRun, domain_runs: list[FlowRun]) -> BatchRecord | None:
    model = next((int(t[len(MODEL_TAG):]) for t in run.tags if t.startswith(MODEL_TAG)), None)
    if model is None:
        return None
    final = run.state is not None and run.state.is_final()
    ids = tuple(int(d) for d in run.parameters.get("domain_ids") or ())
    return BatchRecord(model, ids, final, _message(run), tuple(_domain(d) for d in domain_runs), str(run.id))


@stage
def sweep_state() -> SweepState:
    """Each (model, domain) of this sweep run, over all its attempts: done, running or failed."""
    with get_client(sync_client=True) as client:
        batches = _children(client, UUID(current_run.id))
        records = (_batch(run, _children(client, run.id)) for run in batches)
        return settle(record for record in records if record is not None)


@stage
def dispatch_units(config: SweepConfig, units: list[SweepUnit], api_key_secret: str | None) -> list[UUID]:
    """Start one deployment run per unit, linked to this run and tagged with its model, so any worker
    polling that deployment's pool takes it; their ids (at once)."""
    ids = []
    for unit in units:
        model = config.models[unit.model]
        run_config = config.run_config(unit.model)
        parameters = {"config": run_config.model_dump(mode="json"), "domain_ids": list(unit.domain_ids),
                      "engine_limit": config.engine_limit, "engine_slots": model.slots,
                      "api_key_secret": api_key_secret}
        name = f"{run_config.run_name}-domains-{'-'.join(map(str, unit.domain_ids))}"
        run = run_deployment(unit.deployment, parameters=parameters, timeout=0, flow_run_name=name,
                             tags=[f"{MODEL_TAG}{unit.model}", "socbench-sweep"])
        ids.append(run.id)
    get_run_logger().info("dispatched %d run(s) over %d model(s)", len(ids), len({u.model for u in units}))
    return ids


@stage
def wait_for_runs(ids: list[UUID]) -> None:
    """Block until every run is in a final state (a run whose worker died is marked Crashed by the
    zombie-run automation, deployments/zombie-runs.yaml), logging progress as it changes."""
    logger, left, reported = get_run_logger(), set(ids), -1
    with get_client(sync_client=True) as client:
        while left:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(left))))
            left -= {run.id for run in runs if run.state is not None and run.state.is_final()}
            if len(left) != reported:
                logger.info("runs finished: %d of %d", len(ids) - len(left), len(ids))
                reported = len(left)
            if left:
                time.sleep(POLL_S)


@stage
def report_sweep(config: SweepConfig, state: SweepState, domain_ids: list[int]) -> SweepOutcome:
    """``summary.json``/``.md`` per model over its domains (failed ones named), then the report
    (leaderboard, plots, HTML) over every run under the output folder; the outcome by model."""
    outcome = SweepOutcome({}, {}, {}, "")
    for index in range(len(config.models)):
        run = config.run_config(index)
        results = [state.results[(index, d)] for d in domain_ids if (index, d) in state.results]
        failed = {d: state.failed[(index, d)] for d in domain_ids if (index, d) in state.failed}
        summary = write_run_summary(run.output_dir, run.run_name, results, failed, run.data_record())
        slug = re.sub(r"[^a-z0-9-]+", "-", run.run_name.lower()).strip("-")
        create_table_artifact(summary.rows, key=f"issp-sweep-summary-{slug}",
                              description=f"{run.data_record()['study']} sweep summary: {run.run_name}")
        outcome.summaries[run.run_name] = str(summary.path)
        outcome.completed[run.run_name] = [r.domain_id for r in results]
        if failed:
            outcome.failed[run.run_name] = failed
    output_dir = config.run.output_dir
    board = write_report(output_dir)
    create_table_artifact(leaderboard_rows(board.leaderboard, per_domain=False), key="issp-sweep-leaderboard",
                          description=f"Leaderboard of every run under {output_dir} ({board.html})")
    return dataclasses.replace(outcome, leaderboard=str(board.html))
