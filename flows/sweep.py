"""Scale-out ISSP on Prefect: a model sweep whose domains run as deployment runs on any worker.

``issp-domains`` is deployed once per work pool (``issp-domains/local``, ``issp-domains/gpu``), so every
worker polling that pool takes runs. Retrying ``issp-sweep`` dispatches only what did not complete:
finished domains come back from their runs' persisted results, the engine caches send only unanswered
requests. The single-process ``issp`` flow stays the one-machine default.
"""

from __future__ import annotations

from uuid import UUID

from prefect import flow
from prefect.states import State

from socbench.config import RunConfig
from socbench.domains import select_domains
from socbench.flows import failed as failed_state
from socbench.flows.issp import DEFAULT_CONFIG, issp_domain
from socbench.outcomes import SweepOutcome
from socbench.sweep import SweepConfig, failure_text
from socbench.tasks.engine_slot import engine_slot
from socbench.tasks.export import export
from socbench.tasks.secrets import with_secret_key
from socbench.tasks.sweep import dispatch_units, report_sweep, sweep_state, wait_for_runs
from socbench.tasks.teardown import teardown_safely


@flow(name="issp-domains", persist_result=True)
def issp_domains(config: RunConfig = DEFAULT_CONFIG, domain_ids: list[int] | None = None,
                 engine_limit: str | None = None, engine_slots: int = 0,
                 api_key_secret: str | None = None) -> list[int] | State:
    """Some domains of one model on one engine (default: the config's domains), holding the model's engine
    slots; Failed if any failed."""
    config = with_secret_key(config, api_key_secret)
    ids = domain_ids or [d.id for d in select_domains(config.domain_id, config.start_domain_id,
                                                      config.dataset_dir)]
    failed: dict[int, str] = {}
    with engine_slot(engine_limit, engine_slots):
        try:
            for domain_id in ids:
                state = issp_domain(domain_id, config, own_engine=False, return_state=True)
                if not state.is_completed():
                    failed[domain_id] = state.message or state.name
        finally:
            teardown_safely()
    if failed:
        return failed_state(f"{len(failed)} domain(s) failed: {failed}", {"failed": failed})
    return ids


DEFAULT_SWEEP = SweepConfig()  # the embedded model on the demo data, all domains in one run


@flow(name="issp-sweep", persist_result=True)
def issp_sweep(config: SweepConfig = DEFAULT_SWEEP,
               api_key_secret: str | None = None) -> SweepOutcome | State:
    """Every model over the domains, each run on whichever worker takes it; Failed naming what failed."""
    run = config.run
    domains = select_domains(run.domain_id, run.start_domain_id, run.dataset_dir)
    domain_ids = [d.id for d in domains]
    before = sweep_state()  # on a Retry: what earlier attempts finished or still run
    units = config.units(before.pending(len(config.models), domain_ids))
    launched = dispatch_units(config, units, api_key_secret)
    wait_for_runs([*launched, *map(UUID, before.running_runs)])
    after = sweep_state()
    if run.export:  # every model run with results, as `issp --export` does (before the report links it)
        for index in sorted({i for i, _ in after.results}):
            export(config.run_config(index), return_state=True)
    outcome = report_sweep(config, after, domain_ids)
    if after.failed:
        names = {d.id: d.name for d in domains}
        return failed_state(failure_text(config, after.failed, names), outcome)
    return outcome
