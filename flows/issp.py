"""The ISSP persona benchmark as Prefect flows: composition only, one line per stage.

``issp-domain`` chains the stages of the design card for one domain; ``issp`` runs the
domains from ``start_domain_id`` on one engine (loaded on the first cache miss), isolates
each domain's failure, writes the run summary and ends Failed if any domain failed or is
incomplete (engine errors: its files are written, then the domain ends Failed). Retrying a
failed ``issp`` run reruns only those domains (completed ones come back from their persisted
results) and the engine cache sends only the requests without an answer.
"""

from __future__ import annotations

from prefect import flow
from prefect.states import State
from prefect.utilities.annotations import opaque

from flows import failed as failed_state
from socbench.config import RunConfig
from socbench.data_use import check_data_use
from socbench.domains import select_domains
from socbench.errors import RunFailed
from socbench.records import IsspOutcome
from socbench.scoring import incomplete_reason
from socbench.types import DomainResult
from tasks.build_prompts import build_prompts
from tasks.country_special_options import country_special_options
from tasks.export import export, export_failures
from tasks.extract import extract
from tasks.load_data import load_data
from tasks.report import report, report_run
from tasks.score import score
from tasks.secrets import with_secret_key
from tasks.teardown import teardown_safely
from tasks.vllm_generate import vllm_generate


@flow(name="issp-domain", persist_result=True, flow_run_name="issp-domain-{domain_id}")
def issp_domain(domain_id: int, config: RunConfig, own_engine: bool = True) -> DomainResult:
    """One domain: load → options → prompts → engine → extract → score → report; Failed once its
    files are written if the engine left requests unanswered."""
    # Stage outputs are passed ``opaque``: Prefect still links each task to the one whose result it
    # gets, but does not walk every prompt and answer inside them (walking them, twice per task, took
    # 2/3 of a cached run's time).
    try:
        data = opaque(load_data(domain_id, config))
        items = opaque(country_special_options(data))
        prompts = opaque(build_prompts(data, items, config))
        results = opaque(vllm_generate(prompts, config, f"issp-progress-domain-{domain_id}",
                                       f"ISSP domain {domain_id}"))
        extractions = opaque(extract(prompts, results))
        scored = opaque(score(data, items, extractions, config))
        report(scored, config)
        return finished(scored.unwrap().result)
    finally:
        if own_engine:
            teardown_safely()


def finished(result: DomainResult) -> DomainResult | State:
    """The result; for an incomplete domain a Failed state that carries it ("domain N: K engine
    errors, first: <reason>"): Prefect shows the domain Failed and a Retry of the parent runs it
    again, while the parent still lists it in the summary as incomplete."""
    reason = incomplete_reason(result)
    return result if reason is None else failed_state(f"domain {result.domain_id}: {reason}", result)


DEFAULT_CONFIG = RunConfig()  # the embedded model on the demo data


@flow(name="issp", persist_result=True)
def issp(config: RunConfig = DEFAULT_CONFIG, api_key_secret: str | None = None) -> IsspOutcome:
    """All requested domains on one engine; Failed if any domain failed or is incomplete.

    The API key comes from ``config.engine.api_key_env`` on the worker, or from the Prefect
    Secret block named by ``api_key_secret``; it is never a parameter itself.
    """
    return run_domains(with_secret_key(config, api_key_secret))


def run_domains(config: RunConfig) -> IsspOutcome | State:
    """The parent's body: every domain in turn on one engine, then the run summary; Failed
    (naming them) if a domain failed or is incomplete."""
    domains = select_domains(config.domain_id, config.start_domain_id, config.dataset_dir)
    check_data_use(config, domains)  # licensed data (as the CLI's preflight): a deployment run fails here
    results: list[DomainResult] = []
    failed: dict[int, str] = {}  # no result (its data could not be read, ...)
    incomplete: dict[int, str] = {}  # a result with engine errors: "domain N: K engine errors, first: ..."
    try:
        for domain in domains:
            state = issp_domain(domain.id, config, own_engine=False, return_state=True)
            result = state.result(raise_on_failure=False)
            result = result.outcome if isinstance(result, RunFailed) else result
            if isinstance(result, DomainResult):
                results.append(result)
            if not state.is_completed():
                reasons = incomplete if isinstance(result, DomainResult) else failed
                reasons[domain.id] = state.message or state.name
    finally:
        teardown_safely()
    # before the report, which links the files; a failed export still leaves summary and report
    export_failed = export_failures(export(config, return_state=True) if config.export and results else None)
    written = report_run(config, results, failed, export_failed)
    outcome = IsspOutcome(written.summary, written.report, written.rows, failed, incomplete,
                          [r.domain_id for r in results if r.complete], export_failed)
    if failed or incomplete:
        named = [f"domain {k} failed: {v}" for k, v in failed.items()] + list(incomplete.values())
        return failed_state(f"{len(named)} domain(s) did not complete: " + "; ".join(named), outcome)
    if export_failed:
        return failed_state("export failed: " + "; ".join(export_failed), outcome)
    return outcome
