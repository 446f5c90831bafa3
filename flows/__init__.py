"""Prefect flows: composition only. Every study runs the same two bodies: ``run_unit`` (the design card's
stages for one unit) and ``run_units`` (every unit on one engine, then the run's summary). A flow that ends
Failed returns ``failed(message, outcome)`` (never raises), so every outcome is read the same way."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings
from prefect.states import Failed, State
from prefect.utilities.annotations import opaque

from socbench import pipeline
from socbench.background import few_collections
from socbench.errors import RunFailed
from socbench.log import rerun
from socbench.outcomes import Outcome
from socbench.studies import task_for
from socbench.tasks import Sealed, unsealed
from socbench.tasks.build_prompts import build_prompts
from socbench.tasks.country_special_options import country_special_options
from socbench.tasks.export import export, export_failures
from socbench.tasks.extract import extract
from socbench.tasks.load_data import load_data
from socbench.tasks.report import report, report_run
from socbench.tasks.score import score
from socbench.tasks.secrets import with_secret_key
from socbench.tasks.teardown import teardown_safely
from socbench.tasks.vllm_generate import vllm_generate


def failed(message: str, outcome: Any) -> Any:
    """A Failed state carrying ``outcome`` in a ``RunFailed`` (a Failed state's data must be an exception)."""
    return Failed(message=message, data=RunFailed(message, outcome))


@few_collections()  # every entry: the CLI's and a deployment's parent, a sweep worker's unit
def run_unit(config: Any, unit_id: int, own_engine: bool) -> Any:
    """One unit of ``config``'s study: load → options → prompts → engine → extract → score → report;
    Failed once its files are written if the engine left requests unanswered (the parent still reads its
    result: ``unit_result``). The result is returned sealed (``tasks.Sealed``)."""
    # Stage outputs are passed ``opaque``: Prefect still links each task to the one whose result it gets,
    # but does not walk every prompt and answer inside them (2/3 of a cached run's time when it did).
    started = time.monotonic()
    study = task_for(config)
    unit = study.unit(unit_id)
    try:
        data = opaque(load_data(study, unit))
        samples = opaque(country_special_options(study, unit, data))
        built = build_prompts(study, unit, samples)
        pipeline.release(study, unit)  # held here from now on, each stage's output only while it is needed
        prompts = opaque(built)
        answers = vllm_generate(prompts, study.config.engine_settings(), f"{study.name}-progress-{unit.id}",
                                unit.label)
        extracted = opaque(extract(study, prompts, opaque(answers)))
        plan, incomplete = built.plan, pipeline.engine_errors(answers)
        del built, prompts, answers  # a whole survey's requests and replies are not held through scoring
        scored = score(study, samples, plan, extracted)
        result = study.result(unit, scored, incomplete)
        report(study, opaque(scored), opaque(result), time.monotonic() - started)
        reason = result.incomplete_reason
        return Sealed(result) if reason is None else failed(f"{unit.label}: {reason}", result)
    finally:
        if own_engine:
            teardown_safely()


def unit_result(state: State) -> Any:
    """A flow's result (a failed one's too, from its ``RunFailed``; a unit's unsealed), or the exception it
    raised."""
    result = state.result(raise_on_failure=False)
    result = result.outcome if isinstance(result, RunFailed) else result
    return unsealed(result)


def unit_heartbeats() -> contextlib.AbstractContextManager[Any]:
    """Where a unit flow sends heartbeats of its own: only at a frequency set below Prefect's default (the
    workers' 30 s that ``deployments/zombie-runs.yaml`` needs, so a dead worker's unit is marked Crashed too).
    Otherwise its parent's, from the same process, already say it lives, and each unit's end would wait
    ~0.5 s for Prefect's heartbeat thread (it sleeps in 1 s steps, then is joined): 5 s of a 10-unit run."""
    frequency = get_current_settings().flows.heartbeat_frequency
    default = type(get_current_settings().flows).model_fields["heartbeat_frequency"].default
    if frequency is None or frequency < default:  # off already (socbench's own API), or wanted
        return contextlib.nullcontext()
    return temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


@few_collections()
def run_units(config: Any, unit_flow: Callable[..., Any], api_key_secret: str | None) -> Outcome | State:
    """Every unit in turn on one engine (``unit_flow(unit_id, config, own_engine=False)``), then the export
    and the run's summary; Failed, naming them, if a unit failed or is incomplete or the export failed. The
    API key: ``config.engine.api_key_env`` on the worker, or the Secret block ``api_key_secret``."""
    config = with_secret_key(config, api_key_secret)
    if config.dry_run:  # a deployment's run asked for its cost: nothing is sent
        from socbench.cost import dry_run

        return dry_run(config)
    study = task_for(config)
    stamp = rerun.fingerprint(config)  # as it starts: the data a run read, not what it finds at its end
    units = study.units()
    study.check()  # as the CLI's preflight: a deployment run that may not start fails here, with the reason
    results: list[Any] = []
    failures: dict[int, str] = {}  # no result (its data could not be read, ...)
    incomplete: dict[int, str] = {}  # a result with engine errors: "domain N: K engine errors, first: ..."
    try:
        with unit_heartbeats():  # once: each temporary setting rebuilds Prefect's settings (25 ms)
            for unit in units:
                state = unit_flow(unit.id, config, own_engine=False, return_state=True)
                result = unit_result(state)
                if not isinstance(result, BaseException):
                    results.append(result)
                if not state.is_completed():
                    reasons = failures if isinstance(result, BaseException) else incomplete
                    reasons[unit.id] = state.message or state.name
    finally:
        teardown_safely()
        pipeline.forget()
    # before the report, which links the files; a failed export still leaves summary and report
    exporting = getattr(config, "export", ()) and results
    export_failed = export_failures(export(config, return_state=True) if exporting else None)
    written = report_run(study, opaque(results), failures, export_failed)
    outcome = Outcome(written.printed, written.paths, written.artifacts, failures, incomplete,
                      [r.unit_id for r in results if r.incomplete_reason is None], export_failed)
    if failures or incomplete:
        labels = {unit.id: unit.label for unit in units}
        named = [f"{labels[k]} failed: {v}" for k, v in failures.items()] + list(incomplete.values())
        return failed(f"{len(named)} unit(s) did not complete: " + "; ".join(named), outcome)
    if export_failed:
        return failed("export failed: " + "; ".join(export_failed), outcome)
    rerun.remember(config, stamp, outcome)
    return outcome


def run_inprocess(flow: Any, config: Any) -> Any:
    """``flow(config)`` run in this process; its outcome, a failed run's too (from its ``RunFailed``)."""
    outcome = unit_result(flow(config, return_state=True))
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
